package lifecycle

import (
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// NotifySocketEnv names the service manager's notification socket. systemd
// sets it for units of Type=notify (and notify-reload): an absolute path of a
// datagram socket, or "@name" for a socket in the abstract namespace.
const NotifySocketEnv = "NOTIFY_SOCKET"

// notifyTimeout bounds one notification: a manager that is not reading
// must not hold up a start or a shutdown.
const notifyTimeout = time.Second

// Notifier tells a service manager the process's state with systemd's
// sd_notify(3) protocol, written out: newline-separated VAR=value
// assignments in one datagram to the manager's socket, which learns the
// sender from the kernel's credentials of the datagram. The zero value (no
// socket) sends nothing.
type Notifier struct {
	// Socket is the value of $NOTIFY_SOCKET: an absolute path, or "@name"
	// in Linux's abstract namespace; "" when no manager listens.
	Socket string
}

// NotifierFromEnv is the Notifier of the socket $NOTIFY_SOCKET names.
func NotifierFromEnv() *Notifier { return &Notifier{Socket: os.Getenv(NotifySocketEnv)} }

// Send sends state, such as "READY=1\nSTATUS=listening". Without a socket
// it does nothing and reports false; otherwise it reports true and the
// error of sending, if any.
func (n *Notifier) Send(state string) (bool, error) {
	if n == nil || n.Socket == "" {
		return false, nil
	}
	addr, err := notifyAddr(n.Socket)
	if err != nil {
		return true, err
	}
	c, err := net.DialUnix("unixgram", nil, addr)
	if err != nil {
		return true, fmt.Errorf("notify %s=%q: %w", NotifySocketEnv, n.Socket, err)
	}
	defer c.Close()
	if err := c.SetWriteDeadline(time.Now().Add(notifyTimeout)); err != nil {
		return true, fmt.Errorf("notify %s=%q: %w", NotifySocketEnv, n.Socket, err)
	}
	if _, err := c.Write([]byte(state)); err != nil {
		return true, fmt.Errorf("notify %s=%q: sending %q: %w", NotifySocketEnv, n.Socket, state, err)
	}
	return true, nil
}

// notifyAddr is the socket address $NOTIFY_SOCKET names: an absolute path,
// or with a leading "@" a name in Linux's abstract namespace, whose first
// byte is then NUL. Other forms (systemd also knows vsock: addresses for
// virtual machines) are refused with an error naming the value.
func notifyAddr(name string) (*net.UnixAddr, error) {
	switch {
	case strings.HasPrefix(name, "@") && len(name) > 1:
		return &net.UnixAddr{Name: "\x00" + name[1:], Net: "unixgram"}, nil
	case strings.HasPrefix(name, "/"):
		return &net.UnixAddr{Name: name, Net: "unixgram"}, nil
	}
	return nil, fmt.Errorf("%s=%q: want an absolute socket path or @name (abstract)", NotifySocketEnv, name)
}

// State sends state and logs the outcome: at debug level when it was sent,
// at warn level (with what) when it could not be. Nothing is logged without
// a socket. A failed notification never stops the command: under
// Type=notify the manager times the start out on its own, and elsewhere
// nobody is waiting.
func (n *Notifier) State(log zerolog.Logger, state string) {
	sent, err := n.Send(state)
	switch {
	case err != nil:
		log.Warn().Err(err).Msg("could not notify the service manager")
	case sent:
		log.Debug().Str("state", strings.ReplaceAll(state, "\n", " ")).Msg("notified the service manager")
	}
}

// Ready tells the service manager that the command is up: its servers
// listen and, when asked for, so does its metrics endpoint. status names
// what listens, for `systemctl status`.
func (n *Notifier) Ready(log zerolog.Logger, status string) {
	n.State(log, "READY=1\nSTATUS="+oneLine(status))
}

// Stopping tells the service manager that a shutdown has begun (a drain,
// or stopping after an engine ended), with why.
func (n *Notifier) Stopping(log zerolog.Logger, status string) {
	n.State(log, "STOPPING=1\nSTATUS="+oneLine(status))
}

// Status updates the status line the service manager shows, such as a
// drain's progress.
func (n *Notifier) Status(log zerolog.Logger, status string) {
	n.State(log, "STATUS="+oneLine(status))
}

// Reloading tells the service manager that a configuration reload has
// begun: RELOADING=1 with, as Type=notify-reload requires (systemd 253 and
// later), MONOTONIC_USEC, the CLOCK_MONOTONIC time of the start in
// microseconds, by which the manager tells this reload from an earlier one.
// The reload ends with Ready, or Stopping if it fails for good.
func (n *Notifier) Reloading(log zerolog.Logger, status string) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		log.Warn().Err(err).Msg("could not notify the service manager of a reload: reading CLOCK_MONOTONIC")
		return
	}
	n.State(log, fmt.Sprintf("RELOADING=1\nMONOTONIC_USEC=%d\nSTATUS=%s", ts.Nano()/1e3, oneLine(status)))
}

// ListeningStatus is the READY=1 status of a command: what listens where,
// each part as "name on addr, addr", and the metrics endpoint when it
// serves (metrics is "" when it is off).
func ListeningStatus(metrics string, parts ...string) string {
	s := strings.Join(parts, "; ")
	if metrics != "" {
		s += "; metrics on " + metrics
	}
	return s
}

// oneLine keeps a status to one assignment: a newline in it would start
// another one.
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
