package rps

import (
	"syscall"
	"time"
)

// cpuTimes is the CPU time this process has used, user plus system.
type cpuTimes struct{ total time.Duration }

// processCPU reads this process's CPU time with getrusage; zero if it fails.
func processCPU() cpuTimes {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return cpuTimes{}
	}
	return cpuTimes{total: time.Duration(ru.Utime.Nano() + ru.Stime.Nano())}
}

// sub returns the seconds of CPU used between earlier and t.
func (t cpuTimes) sub(earlier cpuTimes) float64 {
	return (t.total - earlier.total).Seconds()
}
