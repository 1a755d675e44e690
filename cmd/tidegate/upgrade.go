package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/proxy"
	"github.com/tidegate/tidegate/session/proxy/config"
)

// A live upgrade (SIGUSR2 to a running proxy): the old process starts the
// binary found at the path it was started from, with the same arguments,
// and gives it, over a Unix socket on descriptor 3, its listening sockets
// (the proxy's and the metrics one). The new process starts on them and
// says it is ready; then the old one stops accepting and hands over every
// session as it reaches the relay state (session/proxy/upgrade.go), and
// exits 0 once none is left. If the new process fails before it is ready,
// the old one goes on as before.

// upgradeFDEnv names the descriptor of the hand-over socket in a process
// started by a live upgrade.
const upgradeFDEnv = "TIDEGATE_UPGRADE_FD"

// upgradeReadyTimeout bounds how long the old process waits for the new one
// to be ready before it gives up the upgrade.
const upgradeReadyTimeout = 30 * time.Second

// exePath is the path this process was started from, read at start: after
// the binary is replaced there, starting that path runs the new one.
var exePath, exePathErr = os.Executable()

// upgradeListeners is the first message: the names of the listening
// sockets that come with it, in order.
type upgradeListeners struct {
	Names []string `json:"names"`
}

// upgradeReady is the new process's answer once it serves.
type upgradeReady struct {
	PID int `json:"pid"`
	// Acks: this process acknowledges the sessions it takes (an older one
	// did not, and the old process must not wait for it to).
	Acks bool `json:"acks,omitempty"`
}

// listenerName is the hand-over name of the proxy's listener configured
// with address addr: the new process matches its own listeners by it.
func listenerName(addr string) string { return "proxy/" + addr }

// metricsListenerName is the hand-over name of the metrics listener.
const metricsListenerName = "metrics"

// inheritance is what a process started by a live upgrade got from the old
// one: the hand-over socket, and the listening sockets by name.
type inheritance struct {
	hc        *reactor.HandoverConn
	listeners map[string]net.Listener
}

// takeInheritance reads the listening sockets handed over when this process
// was started by a live upgrade; it returns nil otherwise.
func takeInheritance() (*inheritance, error) {
	v := os.Getenv(upgradeFDEnv)
	if v == "" {
		return nil, nil
	}
	_ = os.Unsetenv(upgradeFDEnv) // not for a later upgrade of this process
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("%s=%q: want a descriptor number of 3 or more", upgradeFDEnv, v)
	}
	f := os.NewFile(uintptr(fd), "upgrade")
	hc, err := reactor.HandoverFromFile(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	data, files, err := hc.Recv()
	if err != nil {
		hc.Close()
		return nil, fmt.Errorf("upgrade: reading the listeners from the old process: %w", err)
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	var msg upgradeListeners
	if err := json.Unmarshal(data, &msg); err != nil || len(msg.Names) != len(files) {
		hc.Close()
		return nil, fmt.Errorf("upgrade: the old process sent %d listener names and %d sockets (%v)", len(msg.Names), len(files), err)
	}
	in := &inheritance{hc: hc, listeners: map[string]net.Listener{}}
	for i, name := range msg.Names {
		ln, err := net.FileListener(files[i])
		if err != nil {
			in.close()
			return nil, fmt.Errorf("upgrade: listener %s: %w", name, err)
		}
		in.listeners[name] = ln
	}
	return in, nil
}

// proxyListeners returns the inherited socket of each configured listener,
// matched by its configured address (nil where none came).
func (in *inheritance) proxyListeners(ls []config.ListenerConfig) []net.Listener {
	if in == nil {
		return nil
	}
	out := make([]net.Listener, len(ls))
	for i, l := range ls {
		out[i] = in.listeners[listenerName(l.Listen)]
		delete(in.listeners, listenerName(l.Listen))
	}
	return out
}

// close closes what was not used.
func (in *inheritance) close() {
	for _, ln := range in.listeners {
		ln.Close()
	}
	in.hc.Close()
}

// serve tells the old process this one is ready and takes over its
// sessions in the background.
func (in *inheritance) serve(log zerolog.Logger, p *proxy.Proxy) error {
	for name, ln := range in.listeners { // sent but not configured here
		log.Warn().Str("listener", name).Msg("upgrade: the old process had a listener this configuration does not: closed")
		ln.Close()
	}
	data, _ := json.Marshal(upgradeReady{PID: os.Getpid(), Acks: true})
	if err := in.hc.Send(data); err != nil {
		in.hc.Close()
		return fmt.Errorf("upgrade: telling the old process we are ready: %w", err)
	}
	go func() {
		start := time.Now()
		n, err := p.TakeOver(in.hc)
		in.hc.Close()
		ev := log.Info()
		if err != nil {
			ev = log.Error().Err(err)
		}
		ev.Int("sessions", n).Dur("took", time.Since(start)).Msg("upgrade: took over the old process's sessions")
	}()
	return nil
}

// metricsInherited holds the metrics listener a live upgrade handed over,
// for serveMetrics; metricsServing is the one it serves, for the next upgrade.
var (
	metricsMu        sync.Mutex
	metricsInherited net.Listener
	metricsServing   net.Listener
)

// upgrader runs the old side of a live upgrade of a proxy.
type upgrader struct {
	log           zerolog.Logger
	p             *proxy.Proxy
	stopMetrics   func(context.Context) error
	handoverStall time.Duration // a hand-over ends when no session moved for this long
}

// upgrade starts the new process and hands everything over. It reports
// whether the new process took over; if not, this one goes on serving.
func (u *upgrader) upgrade() (bool, error) {
	if exePathErr != nil {
		return false, fmt.Errorf("upgrade: the path of this binary is unknown: %w", exePathErr)
	}
	hc, childEnd, err := reactor.NewHandoverPair()
	if err != nil {
		return false, err
	}
	defer hc.Close()
	cmd := exec.Command(exePath, os.Args[1:]...)
	cmd.Env = append(os.Environ(), upgradeFDEnv+"=3")
	cmd.ExtraFiles = []*os.File{childEnd}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	err = cmd.Start()
	childEnd.Close()
	if err != nil {
		return false, fmt.Errorf("upgrade: starting %s: %w", exePath, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	fail := func(err error) (bool, error) {
		_ = cmd.Process.Kill()
		return false, err
	}
	byIndex, err := u.p.Reactor().ListenerFiles()
	if err != nil {
		return fail(err)
	}
	addrs := u.p.ListenAddrs()
	var files []*os.File
	var names []string
	for idx, f := range byIndex {
		files = append(files, f)
		names = append(names, listenerName(addrs[idx]))
	}
	metricsMu.Lock()
	if ml, ok := metricsServing.(*net.TCPListener); ok {
		if f, err := ml.File(); err == nil {
			files = append(files, f)
			names = append(names, metricsListenerName)
		}
	}
	metricsMu.Unlock()
	data, _ := json.Marshal(upgradeListeners{Names: names})
	err = hc.Send(data, files...)
	for _, f := range files {
		f.Close()
	}
	if err != nil {
		return fail(err)
	}
	ready := make(chan error, 1)
	var r upgradeReady
	go func() {
		data, files, err := hc.Recv()
		for _, f := range files {
			f.Close()
		}
		if err == nil {
			err = json.Unmarshal(data, &r)
		}
		ready <- err
	}()
	select {
	case err := <-ready:
		if err != nil {
			return fail(fmt.Errorf("upgrade: the new process (pid %d) did not get ready: %w", cmd.Process.Pid, err))
		}
	case err := <-exited:
		return false, fmt.Errorf("upgrade: the new process (pid %d) exited before it was ready: %v", cmd.Process.Pid, err)
	case <-time.After(upgradeReadyTimeout):
		return fail(fmt.Errorf("upgrade: the new process (pid %d) was not ready within %s", cmd.Process.Pid, upgradeReadyTimeout))
	}
	pid := cmd.Process.Pid
	u.log.Info().Int("new_pid", pid).Msg("upgrade: the new process serves; handing over the sessions")
	notifyState(u.log, fmt.Sprintf("MAINPID=%d\nSTATUS=upgraded: pid %d took over", pid, pid))
	// The new process accepts on the same sockets. Until every session has
	// moved this one only holds its listeners (the backlog is the new
	// one's), so that it can take up accepting again should the new process
	// die meanwhile.
	u.p.Reactor().HoldAccepting()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var childErr error
	childGone := make(chan struct{})
	go func() {
		select {
		case childErr = <-exited:
			close(childGone)
			cancel()
		case <-ctx.Done():
		}
	}()
	// No deadline while sessions move: one cut at a deadline is what a live
	// upgrade is there to avoid. Only a hand-over that stops moving ends.
	start := time.Now()
	n, err := u.p.HandOver(ctx, hc, proxy.HandOverOptions{Stall: u.handoverStall, Acked: r.Acks})
	st := u.p.Stats()
	if err != nil {
		// A new process that died shows first as the end of the hand-over
		// socket, and only then to Wait.
		select {
		case <-childGone:
		case <-time.After(childExitWait):
		}
	}
	select {
	case <-childGone:
		u.p.Reactor().ResumeAccepting()
		u.p.HandOverLost()
		notifyState(u.log, fmt.Sprintf("MAINPID=%d\nSTATUS=upgrade failed: pid %d exited during the hand-over", os.Getpid(), pid))
		u.log.Error().Err(err).Int("new_pid", pid).AnErr("exit", childErr).Int("sessions_sent", n).Int64("sessions_here", st.Active).
			Msg("upgrade: the new process exited during the hand-over; this process accepts again and keeps the sessions it still has (those it had sent are lost)")
		return false, fmt.Errorf("upgrade: the new process (pid %d) exited during the hand-over: %v", pid, childErr)
	default:
	}
	cancel()
	ev := u.log.Info()
	if err != nil {
		ev = u.log.Warn().Err(err)
	}
	ev.Int("sessions", n).Dur("took", time.Since(start)).Int64("left", st.Active).
		Int64("queued_bytes", st.HandedOverQueued).Msg("upgrade: sessions handed over")
	// Every session that could go went: the sockets are the new process's,
	// and so are the health checks.
	u.p.Reactor().ReleaseListeners()
	sctx, scancel := context.WithTimeout(context.Background(), time.Second)
	_ = u.stopMetrics(sctx)
	scancel()
	return true, nil
}

// childExitWait is how long a hand-over that failed waits to learn whether
// the new process exited.
const childExitWait = 2 * time.Second

// errNoUpgrade is what a command without a live upgrade says to SIGUSR2.
var errNoUpgrade = errors.New("this command has no live upgrade; SIGUSR2 ignored")
