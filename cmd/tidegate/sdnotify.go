package main

import (
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// notifySocketEnv names the service manager's notification socket. systemd
// sets it for units of Type=notify (and notify-reload): an absolute path of a
// datagram socket, or "@name" for a socket in the abstract namespace.
const notifySocketEnv = "NOTIFY_SOCKET"

// notifyTimeout bounds one notification: a manager that is not reading
// must not hold up a start or a shutdown.
const notifyTimeout = time.Second

// sdNotify sends state, newline-separated VAR=value assignments such as
// "READY=1\nSTATUS=listening", in one datagram to the socket $NOTIFY_SOCKET
// names. Without the variable it does nothing and reports false; otherwise it
// reports true and the error of sending, if any. This is systemd's
// sd_notify(3) protocol, written out: the manager learns the sender from
// the kernel's credentials of the datagram.
func sdNotify(state string) (bool, error) {
	name := os.Getenv(notifySocketEnv)
	if name == "" {
		return false, nil
	}
	addr, err := notifyAddr(name)
	if err != nil {
		return true, err
	}
	c, err := net.DialUnix("unixgram", nil, addr)
	if err != nil {
		return true, fmt.Errorf("notify %s=%q: %w", notifySocketEnv, name, err)
	}
	defer c.Close()
	if err := c.SetWriteDeadline(time.Now().Add(notifyTimeout)); err != nil {
		return true, fmt.Errorf("notify %s=%q: %w", notifySocketEnv, name, err)
	}
	if _, err := c.Write([]byte(state)); err != nil {
		return true, fmt.Errorf("notify %s=%q: sending %q: %w", notifySocketEnv, name, state, err)
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
	return nil, fmt.Errorf("%s=%q: want an absolute socket path or @name (abstract)", notifySocketEnv, name)
}

// notifyState sends state with sdNotify and logs the outcome: at debug
// level when it was sent, at warn level (with what) when it could not be.
// Nothing is logged without $NOTIFY_SOCKET. A failed notification never
// stops the command: under Type=notify the manager times the start out on
// its own, and elsewhere nobody is waiting.
func notifyState(log zerolog.Logger, state string) {
	sent, err := sdNotify(state)
	switch {
	case err != nil:
		log.Warn().Err(err).Msg("could not notify the service manager")
	case sent:
		log.Debug().Str("state", strings.ReplaceAll(state, "\n", " ")).Msg("notified the service manager")
	}
}

// notifyReady tells the service manager that the command is up: its servers
// listen and, when asked for, so does its metrics endpoint. status names what
// listens, for `systemctl status`.
func notifyReady(log zerolog.Logger, status string) {
	notifyState(log, "READY=1\nSTATUS="+oneLine(status))
}

// notifyStopping tells the service manager that a shutdown has begun (a
// drain, or stopping after an engine ended), with why.
func notifyStopping(log zerolog.Logger, status string) {
	notifyState(log, "STOPPING=1\nSTATUS="+oneLine(status))
}

// notifyStatus updates the status line the service manager shows, such as
// a drain's progress.
func notifyStatus(log zerolog.Logger, status string) {
	notifyState(log, "STATUS="+oneLine(status))
}

// notifyReloading tells the service manager that a configuration reload
// has begun: RELOADING=1 with, as Type=notify-reload requires (systemd 253
// and later), MONOTONIC_USEC, the CLOCK_MONOTONIC time of the start in
// microseconds, by which the manager tells this reload from an earlier one.
// The reload ends with notifyReady, or notifyStopping if it fails for good.
//
// Reloading (SIGHUP) is not implemented yet: only the tests call this, and
// the unit in deploy/systemd has no ExecReload until it is.
func notifyReloading(log zerolog.Logger, status string) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		log.Warn().Err(err).Msg("could not notify the service manager of a reload: reading CLOCK_MONOTONIC")
		return
	}
	notifyState(log, fmt.Sprintf("RELOADING=1\nMONOTONIC_USEC=%d\nSTATUS=%s", ts.Nano()/1e3, oneLine(status)))
}

// listeningStatus is the READY=1 status of a command: what listens where,
// each part as "name on addr, addr", and the metrics endpoint when it
// serves (metrics is "" when it is off).
func listeningStatus(metrics string, parts ...string) string {
	s := strings.Join(parts, "; ")
	if metrics != "" {
		s += "; metrics on " + metrics
	}
	return s
}

// oneLine keeps a status to one assignment: a newline in it would start
// another one.
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
