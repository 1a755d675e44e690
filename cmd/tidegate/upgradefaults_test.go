package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/gomcbot"
)

// startUpgradable starts tidegate in a child process with a raw listener
// and a Minecraft one (a client that sends no handshake waits there for a
// minute, keeping a hand-over going), and returns it with its addresses and
// the pid its health endpoint reports.
func startUpgradable(t *testing.T) (ch *child, listen, mcListen, metrics string, pid int) {
	t.Helper()
	listen, mcListen, metrics = freePort(t), freePort(t), freePort(t)
	cfg := filepath.Join(t.TempDir(), "proxy.yaml")
	yaml := fmt.Sprintf("listeners: [{listen: %q, mode: raw, group: main}, {listen: %q, mode: minecraft}]\n"+
		"default_group: mc\ngroups: {main: {backends: [{addr: %q}]}, mc: {backends: [{addr: %q}]}}\n"+
		"limits: {handshake_timeout: 60s}\nshutdown: {drain_timeout: 60s}\n", listen, mcListen, echoBackend(t), minecraftBackend(t))
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	ch = startChild(t, 0, "proxy", "--config", cfg, "--metrics-listen", metrics, "--log-level", "info")
	waitListening(t, ch, listen)
	return ch, listen, mcListen, metrics, healthPID(t, metrics)
}

// upgradeWithAClientWaiting connects a client that sends no handshake to
// ch (pid), which keeps the hand-over of the upgrade it then starts going,
// and returns that client and the new process's pid once it serves.
func upgradeWithAClientWaiting(t *testing.T, ch *child, mcListen, metrics string, pid int) (net.Conn, int) {
	t.Helper()
	waiting, err := net.DialTimeout("tcp", mcListen, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.cmd.Process.Signal(syscall.SIGUSR2); err != nil {
		waiting.Close()
		t.Fatal(err)
	}
	return waiting, newHealthPID(t, metrics, pid)
}

// servesAgain checks that the old process ch (pid) serves again after a
// failed upgrade: it runs, its health endpoint answers, and new raw
// sessions and a go-mc bot go through it.
func servesAgain(t *testing.T, ch *child, pid int, listen, mcListen, metrics string) {
	t.Helper()
	if !ch.running() {
		t.Fatalf("the old process exited: %v", <-ch.done)
	}
	if got := healthPID(t, metrics); got != pid {
		t.Fatalf("/healthz answers from pid %d, want the old process %d", got, pid)
	}
	for i := 0; i < 5; i++ { // each a new accept, which only the old process can make now
		c, err := net.DialTimeout("tcp", listen, 5*time.Second)
		if err != nil {
			t.Fatalf("session %d after the failed upgrade: %v", i, err)
		}
		err = echoFrame(c, []byte("still here"), 5*time.Second)
		c.Close()
		if err != nil {
			t.Fatalf("session %d after the failed upgrade: %v", i, err)
		}
	}
	b := gomcbot.Join(t, mcListen, "Survivor", 30*time.Second)
	b.Echo(t, []byte("through the old process"))
}

// TestSIGTERMToTheNewProcessMidTakeOver: a SIGTERM to the new process
// while it still takes over (a client that has not sent its handshake
// keeps the hand-over going) drains it like any other: a session it has
// relays through the drain, and once that one ends the new process exits.
// The old process, whose hand-over it ended, takes up accepting again and
// goes on serving, the waiting client with it.
func TestSIGTERMToTheNewProcessMidTakeOver(t *testing.T) {
	ch, listen, mcListen, metrics, oldPID := startUpgradable(t)
	relaying, err := net.DialTimeout("tcp", listen, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer relaying.Close()
	if err := echoFrame(relaying, []byte("before the upgrade"), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	waiting, newPID := upgradeWithAClientWaiting(t, ch, mcListen, metrics, oldPID)
	defer waiting.Close()
	t.Cleanup(func() { _ = syscall.Kill(newPID, syscall.SIGKILL) })
	if err := syscall.Kill(newPID, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// On whichever process it is, the session relays through the drain.
	if err := echoFrame(relaying, []byte("while the new process drains"), 10*time.Second); err != nil {
		t.Fatalf("the relaying session during the new process's drain: %v", err)
	}
	relaying.Close() // the new process's drain has nothing left: it exits
	ch.waitLog(t, "exited during the hand-over")
	servesAgain(t, ch, oldPID, listen, mcListen, metrics)
	// The client that never sent its handshake is still the old process's:
	// its connection is open (its handshake timeout is a minute away).
	_ = waiting.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := waiting.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the waiting client's connection: %v, want it open", err)
	}
}
