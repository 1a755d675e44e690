package upgradeload

import (
	"runtime"
	"syscall"
	"time"

	"github.com/tidegate/tidegate/benchmarks/procstat"
)

// usage is the CPU time of this run's processes and of the machine at one
// moment.
type usage struct {
	at time.Time
	// self is this tool's CPU; children its reaped children's (the old
	// proxy once it exited and was waited for); proxy the live proxy's
	// (schedstat).
	self, children, proxy time.Duration
	// procs is the machine's user, nice and system time, busy that and
	// interrupts, total busy and idle (/proc/stat, USER_HZ ticks).
	procs, busy, total int64
	ok                 bool
}

// readUsage reads the usage with pid as the live proxy.
func readUsage(pid int) usage {
	u := usage{at: time.Now(), ok: true}
	var err error
	if u.self, err = procstat.SelfCPU(); err != nil {
		u.ok = false
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) == nil {
		u.children = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	} else {
		u.ok = false
	}
	if u.proxy, err = procstat.CPU(pid); err != nil {
		u.ok = false
	}
	if m, err := procstat.MachineCPU(); err == nil {
		u.procs, u.busy, u.total = m.Processes, m.Busy, m.Busy+m.Idle
	} else {
		u.ok = false
	}
	return u
}

// CPUWindow is where the CPU went over a window, in percent of one core:
// this tool, the proxy (the old process and the new one across an
// upgrade), and the rest of the machine's processes (what else ran);
// MachineBusyPct is the machine's busy share of all its cores, interrupts
// included (loopback packets are processed there). -1 where unknown.
type CPUWindow struct {
	ToolPct        float64 `json:"tool_pct"`
	ProxyPct       float64 `json:"proxy_pct"`
	OtherPct       float64 `json:"other_pct"`
	MachineBusyPct float64 `json:"machine_busy_pct"`
}

// unknownCPU is a window that could not be measured.
var unknownCPU = CPUWindow{ToolPct: -1, ProxyPct: -1, OtherPct: -1, MachineBusyPct: -1}

// cpuBetween returns the window from a to b. The proxy's part is its CPU at
// b less its CPU at a, plus what children that were reaped in between used
// (the old proxy, whose CPU at a is then subtracted through a.proxy).
func cpuBetween(a, b usage) CPUWindow {
	w := b.at.Sub(a.at)
	total := b.total - a.total
	if !a.ok || !b.ok || w <= 0 || total <= 0 {
		return unknownCPU
	}
	pct := func(d time.Duration) float64 { return 100 * float64(d) / float64(w) }
	cw := CPUWindow{
		ToolPct:        pct(b.self - a.self),
		ProxyPct:       pct(b.children - a.children + b.proxy - a.proxy),
		MachineBusyPct: 100 * float64(b.busy-a.busy) / float64(total),
	}
	procs := 100 * float64(b.procs-a.procs) / float64(total) * float64(runtime.NumCPU())
	cw.OtherPct = max(0, procs-cw.ToolPct-cw.ProxyPct)
	return cw
}
