package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/reactor/handoverwire"
	"github.com/tidegate/tidegate/session/proxy"
)

// upgradeReadyTimeout bounds how long the old process waits for the new one
// to be ready before it gives up the upgrade.
const upgradeReadyTimeout = 30 * time.Second

// childExitWait is how long a hand-over that failed waits to learn whether
// the new process exited.
const childExitWait = 2 * time.Second

// Upgrader runs the old side of a live upgrade of a proxy (see inherit.go
// for the whole exchange).
type Upgrader struct {
	Log     zerolog.Logger
	Process *Process
	Proxy   *proxy.Proxy
	// Metrics is the metrics listener to hand over and then stop; nil when
	// off.
	Metrics *MetricsServer
	// HandoverStall ends a hand-over when no session moved for this long.
	HandoverStall time.Duration
}

// Upgrade starts the new process and hands everything over. It reports
// whether the new process took over; if not, this one goes on serving.
func (u *Upgrader) Upgrade() (bool, error) {
	if u.Proxy.TakingOver() {
		// This process is itself the new one of an upgrade still under way
		// (a second SIGUSR2, or one sent to it too early): starting another
		// now would hand on sessions still arriving, and exit before they have.
		return false, fmt.Errorf("upgrade: %w; try again once it is done", proxy.ErrTakingOver)
	}
	// The new process takes the listeners there are now: a reload here
	// (POST /-/reload) must not change them until it is over.
	defer u.Proxy.HoldReloads()()
	exe := u.Process.exe
	if u.Process.exeErr != nil {
		return false, fmt.Errorf("upgrade: the path of this binary is unknown: %w", u.Process.exeErr)
	}
	hc, childEnd, err := handoverwire.NewPair()
	if err != nil {
		return false, err
	}
	defer hc.Close()
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Env = append(os.Environ(), UpgradeFDEnv+"=3")
	cmd.ExtraFiles = []*os.File{childEnd}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	err = cmd.Start()
	childEnd.Close()
	if err != nil {
		return false, fmt.Errorf("upgrade: starting %s: %w", exe, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	fail := func(err error) (bool, error) {
		_ = cmd.Process.Kill()
		return false, err
	}
	if err := u.sendListeners(hc); err != nil {
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
	return u.handOver(hc, cmd.Process.Pid, exited, proxy.HandOverOptions{Stall: u.HandoverStall, Acked: r.Acks, AckEach: r.AcksEach, StateVersion: r.StateVersion})
}

// sendListeners sends the proxy's listening sockets and the metrics one,
// with their names, as the first message.
func (u *Upgrader) sendListeners(hc *handoverwire.Conn) error {
	byIndex, err := u.Proxy.Reactor().ListenerFiles()
	if err != nil {
		return err
	}
	addrs := u.Proxy.ListenAddrs()
	var files []*os.File
	var names []string
	for idx, f := range byIndex {
		files = append(files, f)
		names = append(names, proxyListenerName(addrs[idx]))
	}
	if f := u.Metrics.listenerFile(); f != nil {
		files = append(files, f)
		names = append(names, metricsListenerName)
	}
	data, _ := json.Marshal(upgradeListeners{Names: names})
	err = hc.Send(data, files...)
	for _, f := range files {
		f.Close()
	}
	return err
}

// handOver hands the sessions over to the new process pid, which serves,
// and reports whether it took over; exited gets its end.
func (u *Upgrader) handOver(hc *handoverwire.Conn, pid int, exited <-chan error, opt proxy.HandOverOptions) (bool, error) {
	p, notify := u.Proxy, u.Process.notify
	u.Log.Info().Int("new_pid", pid).Msg("upgrade: the new process serves; handing over the sessions")
	notify.State(u.Log, fmt.Sprintf("MAINPID=%d\nSTATUS=upgraded: pid %d took over", pid, pid))
	// The new process accepts on the same sockets. Until every session has
	// moved this one only holds its listeners (the backlog is the new
	// one's), so that it can take up accepting again should the new process
	// die meanwhile.
	p.Reactor().HoldAccepting()
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
	n, err := p.HandOver(ctx, hc, opt)
	st := p.Stats()
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
		p.Reactor().ResumeAccepting()
		p.HandOverLost()
		notify.State(u.Log, fmt.Sprintf("MAINPID=%d\nSTATUS=upgrade failed: pid %d exited during the hand-over", os.Getpid(), pid))
		u.Log.Error().Err(err).Int("new_pid", pid).AnErr("exit", childErr).Int("sessions_sent", n).Int64("sessions_here", st.Active).
			Msg("upgrade: the new process exited during the hand-over; this process accepts again and keeps the sessions it still has (those it had sent are lost)")
		return false, fmt.Errorf("upgrade: the new process (pid %d) exited during the hand-over: %v", pid, childErr)
	default:
	}
	cancel()
	ev := u.Log.Info()
	if err != nil {
		ev = u.Log.Warn().Err(err)
	}
	ev.Int("sessions", n).Dur("took", time.Since(start)).Int64("left", st.Active).
		Int64("queued_bytes", st.HandedOverQueued).Msg("upgrade: sessions handed over")
	// Every session that could go went: the sockets are the new process's,
	// and so are the health checks.
	p.Reactor().ReleaseListeners()
	sctx, scancel := context.WithTimeout(context.Background(), time.Second)
	_ = u.Metrics.Shutdown(sctx)
	scancel()
	return true, nil
}
