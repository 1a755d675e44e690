package lifecycle

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/tidegate/tidegate/reactor/handoverwire"
)

// handOverTo gives this process the new process's end of a hand-over
// socket, as a live upgrade's exec does: $TIDEGATE_UPGRADE_FD names a
// descriptor of its own. It returns the old process's end.
func handOverTo(t *testing.T) *handoverwire.Conn {
	t.Helper()
	hc, childEnd, err := handoverwire.NewPair()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hc.Close() })
	// A descriptor that only TakeInheritance owns: childEnd's own would be
	// closed twice.
	fd, err := syscall.Dup(int(childEnd.Fd()))
	childEnd.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(UpgradeFDEnv, strconv.Itoa(fd))
	return hc
}

// listenFile is a loopback listener's socket, as the old process sends it.
func listenFile(t *testing.T) (string, *os.File) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return ln.Addr().String(), f
}

// TestInheritanceTakesListenersByName: the new process gets the old one's
// listeners by name, the proxy's matched by configured address and the
// metrics one apart; what nothing takes is closed with the hand-over
// socket; and the variable is gone for a later upgrade.
func TestInheritanceTakesListenersByName(t *testing.T) {
	hc := handOverTo(t)
	proxyAddr, proxyFile := listenFile(t)
	goneAddr, goneFile := listenFile(t)
	metricsAddr, metricsFile := listenFile(t)
	names := []string{proxyListenerName("0.0.0.0:25577"), proxyListenerName("0.0.0.0:25578"), metricsListenerName}
	data, _ := json.Marshal(upgradeListeners{Names: names})
	if err := hc.Send(data, proxyFile, goneFile, metricsFile); err != nil {
		t.Fatal(err)
	}

	in, err := TakeInheritance()
	if err != nil {
		t.Fatal(err)
	}
	if v, set := os.LookupEnv(UpgradeFDEnv); set {
		t.Fatalf("%s=%q still set after the inheritance was taken", UpgradeFDEnv, v)
	}
	ls := in.ProxyListeners([]string{"0.0.0.0:25577", "0.0.0.0:9999"})
	if len(ls) != 2 || ls[0] == nil || ls[0].Addr().String() != proxyAddr || ls[1] != nil {
		t.Fatalf("proxy listeners %v: want the one of 0.0.0.0:25577 on %s and none for 0.0.0.0:9999", ls, proxyAddr)
	}
	defer ls[0].Close()
	ml := in.MetricsListener()
	if ml == nil || ml.Addr().String() != metricsAddr {
		t.Fatalf("metrics listener %v, want the one on %s", ml, metricsAddr)
	}
	defer ml.Close()
	if in.MetricsListener() != nil {
		t.Fatal("the metrics listener was taken twice")
	}
	gone := in.listeners[proxyListenerName("0.0.0.0:25578")]
	if gone == nil || gone.Addr().String() != goneAddr {
		t.Fatalf("the untaken listener on %s was not kept for Close", goneAddr)
	}
	in.Close()
	if _, err := gone.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("the untaken listener after Close: Accept: %v, want %v", err, net.ErrClosed)
	}

	var none *Inheritance
	if none.ProxyListeners([]string{"x"}) != nil || none.MetricsListener() != nil {
		t.Fatal("a nil Inheritance has listeners")
	}
}

// TestInheritanceRefusesWhatDoesNotFit: without the variable there is no
// inheritance; a bad descriptor number, or names that do not match the
// sockets sent, are refused naming what came.
func TestInheritanceRefusesWhatDoesNotFit(t *testing.T) {
	t.Setenv(UpgradeFDEnv, "")
	if in, err := TakeInheritance(); in != nil || err != nil {
		t.Fatalf("without %s: %v, %v; want nil, nil", UpgradeFDEnv, in, err)
	}
	for _, v := range []string{"2", "three"} {
		t.Setenv(UpgradeFDEnv, v)
		if _, err := TakeInheritance(); err == nil || !strings.Contains(err.Error(), strconv.Quote(v)) {
			t.Errorf("%s=%s: %v, want an error naming the value", UpgradeFDEnv, v, err)
		}
	}
	hc := handOverTo(t)
	_, f := listenFile(t)
	data, _ := json.Marshal(upgradeListeners{Names: []string{"metrics", "proxy/:1"}})
	if err := hc.Send(data, f); err != nil {
		t.Fatal(err)
	}
	if _, err := TakeInheritance(); err == nil || !strings.Contains(err.Error(), "2 listener names and 1 sockets") {
		t.Fatalf("two names, one socket: %v", err)
	}
}
