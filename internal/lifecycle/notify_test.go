package lifecycle

import (
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/tidegate/tidegate/internal/testkit/notifysock"
)

func TestSDNotifyUnsetIsANoop(t *testing.T) {
	t.Setenv(NotifySocketEnv, "")
	n := NotifierFromEnv()
	sent, err := n.Send("READY=1")
	if sent || err != nil {
		t.Fatalf("Send without %s = %v, %v; want false, nil", NotifySocketEnv, sent, err)
	}
	n.Ready(zerolog.Nop(), "nothing") // must not panic or block
	var none *Notifier
	if sent, err := none.Send("READY=1"); sent || err != nil {
		t.Fatalf("nil Notifier: Send = %v, %v; want false, nil", sent, err)
	}
}

func TestSDNotifyPathAndAbstract(t *testing.T) {
	forms := map[string]func(t *testing.T) string{
		"path": func(t *testing.T) string { return filepath.Join(t.TempDir(), "notify") },
		"abstract": func(t *testing.T) string {
			if runtime.GOOS != "linux" {
				t.Skip("abstract unix sockets are Linux's")
			}
			return notifysock.AbstractName()
		},
	}
	for form, name := range forms {
		t.Run(form, func(t *testing.T) {
			c := notifysock.Listen(t, name(t))
			n, log := NotifierFromEnv(), zerolog.Nop()
			n.Ready(log, ListeningStatus("127.0.0.1:9225", "proxy on 0.0.0.0:25577 (minecraft)"))
			if got, want := notifysock.Read(t, c, 5*time.Second), "READY=1\nSTATUS=proxy on 0.0.0.0:25577 (minecraft); metrics on 127.0.0.1:9225"; got != want {
				t.Errorf("ready: got %q, want %q", got, want)
			}
			n.Stopping(log, "draining after terminated:\n3 open")
			if got, want := notifysock.Read(t, c, 5*time.Second), "STOPPING=1\nSTATUS=draining after terminated: 3 open"; got != want {
				t.Errorf("stopping: got %q, want %q (a newline in a status must not start an assignment)", got, want)
			}
			n.Status(log, "draining: 1 open")
			if got, want := notifysock.Read(t, c, 5*time.Second), "STATUS=draining: 1 open"; got != want {
				t.Errorf("status: got %q, want %q", got, want)
			}
		})
	}
}

// TestSDNotifyReloading: RELOADING=1 carries MONOTONIC_USEC, the monotonic
// clock at the call, as Type=notify-reload wants.
func TestSDNotifyReloading(t *testing.T) {
	c := notifysock.Listen(t, filepath.Join(t.TempDir(), "notify"))
	now := func() int64 {
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			t.Fatal(err)
		}
		return ts.Nano() / 1e3
	}
	before := now()
	NotifierFromEnv().Reloading(zerolog.Nop(), "reloading /etc/tidegate/proxy.yaml")
	after := now()
	lines := strings.Split(notifysock.Read(t, c, 5*time.Second), "\n")
	if len(lines) != 3 || lines[0] != "RELOADING=1" || !strings.HasPrefix(lines[1], "MONOTONIC_USEC=") ||
		lines[2] != "STATUS=reloading /etc/tidegate/proxy.yaml" {
		t.Fatalf("reloading: got %q", lines)
	}
	usec, err := strconv.ParseInt(strings.TrimPrefix(lines[1], "MONOTONIC_USEC="), 10, 64)
	if err != nil || usec < before || usec > after {
		t.Fatalf("MONOTONIC_USEC %q: want a number in [%d, %d] (%v)", lines[1], before, after, err)
	}
}

func TestSDNotifyErrors(t *testing.T) {
	for _, name := range []string{"relative/notify", "vsock:2:1234", "@"} {
		sent, err := (&Notifier{Socket: name}).Send("READY=1")
		if !sent || err == nil || !strings.Contains(err.Error(), strconv.Quote(name)) {
			t.Errorf("%s=%q: got %v, %v; want true and an error naming the value", NotifySocketEnv, name, sent, err)
		}
	}
	missing := filepath.Join(t.TempDir(), "nobody-listens")
	if sent, err := (&Notifier{Socket: missing}).Send("READY=1"); !sent || err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("no socket at %s: got %v, %v; want true and an error naming it", missing, sent, err)
	}
}
