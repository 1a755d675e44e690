package procstat

import (
	"context"
	"time"
)

// WindowCPU is what a set of processes and the machine did over a sampling
// window: the processes' on-CPU time in percent of one core (Pct), their
// threads' wake-ups per second (Runs) and the rest of the machine's
// processes' CPU in percent of one core (Other). The paused-cost benchmarks
// (bench drain, bench paused) report these three the same way.
type WindowCPU struct{ Pct, Runs, Other float64 }

// Window is the CPU of the sampled processes, of the machine and of this
// process when a window started.
type Window struct {
	start time.Time
	procs Sample
	mach  int64
	self  time.Duration
}

// StartWindow starts a window over pids.
func StartWindow(pids []int) (Window, error) {
	p, err := Read(pids)
	if err != nil {
		return Window{}, err
	}
	m, err := MachineCPU()
	if err != nil {
		return Window{}, err
	}
	self, err := SelfCPU()
	if err != nil {
		return Window{}, err
	}
	return Window{start: time.Now(), procs: p, mach: m.Processes, self: self}, nil
}

// End returns the figures since w started. In a window in which this process
// works too (it drives load), lessSelf takes its CPU out of the rest of the
// machine's; in a window in which it sleeps there is none to take out.
func (w Window) End(pids []int, lessSelf bool) (WindowCPU, error) {
	e, err := StartWindow(pids) // the figures now
	if err != nil {
		return WindowCPU{}, err
	}
	b, el := e.procs, e.start.Sub(w.start).Seconds()
	used := b.CPUNs - w.procs.CPUNs
	rest := e.mach - w.mach - used
	if lessSelf {
		rest -= int64(e.self - w.self)
	}
	return WindowCPU{Pct: float64(used) / 1e9 / el * 100, Runs: float64(b.Slices-w.procs.Slices) / el,
		Other: max(0, float64(rest)/1e9) / el * 100}, nil
}

// SampleWindow samples pids and the machine over d, this process sleeping;
// it fails when ctx ends first.
func SampleWindow(ctx context.Context, pids []int, d time.Duration) (WindowCPU, error) {
	w, err := StartWindow(pids)
	if err != nil {
		return WindowCPU{}, err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return WindowCPU{}, ctx.Err()
	}
	return w.End(pids, false)
}
