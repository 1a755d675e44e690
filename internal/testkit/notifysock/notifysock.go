// Package notifysock is a service manager's end of $NOTIFY_SOCKET for
// tests: a datagram socket whose notifications a test reads.
package notifysock

import (
	"fmt"
	"net"
	"os"
	"testing"
	"time"
)

// Listen listens on a datagram socket at name (a path, or "@name" in the
// abstract namespace) until the test ends, and sets NOTIFY_SOCKET to name
// for the test.
func Listen(t *testing.T, name string) *net.UnixConn {
	t.Helper()
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatalf("listen unixgram %q: %v", name, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	t.Setenv("NOTIFY_SOCKET", name)
	return c
}

// Read reads one notification from c within d.
func Read(t *testing.T, c *net.UnixConn, d time.Duration) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatalf("reading a notification: %v", err)
	}
	return string(buf[:n])
}

// AbstractName is a name in the abstract namespace no other test uses.
func AbstractName() string {
	return fmt.Sprintf("@tidegate-test-%d-%d", os.Getpid(), time.Now().UnixNano())
}
