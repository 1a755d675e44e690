package drainload

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// kernelTCPMemory is the memory all TCP sockets of the machine hold now
// (the "mem" pages of /proc/net/sockstat), in bytes.
func kernelTCPMemory() (int64, error) {
	b, err := os.ReadFile("/proc/net/sockstat")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "TCP:")
		if !ok {
			continue
		}
		fs := strings.Fields(rest)
		for i := 0; i+1 < len(fs); i += 2 {
			if fs[i] == "mem" {
				pages, err := strconv.ParseInt(fs[i+1], 10, 64)
				if err != nil {
					return 0, fmt.Errorf("/proc/net/sockstat: mem %q: %w", fs[i+1], err)
				}
				return pages * int64(os.Getpagesize()), nil
			}
		}
	}
	return 0, fmt.Errorf("/proc/net/sockstat: no TCP mem")
}

// supported reports whether the measurement can run here.
func supported() error { return nil }

// kernelCounters are the TcpExt counters (/proc/net/netstat) that show the
// kernel struggling: entering TCP memory pressure, segments dropped from a
// full receive queue, retransmission timeouts.
type kernelCounters struct {
	MemoryPressures, RcvQDrop, Timeouts int64
}

func readKernelCounters() (kernelCounters, error) {
	b, err := os.ReadFile("/proc/net/netstat")
	if err != nil {
		return kernelCounters{}, err
	}
	lines := strings.Split(string(b), "\n")
	for i := 0; i+1 < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "TcpExt:") || !strings.HasPrefix(lines[i+1], "TcpExt:") {
			continue
		}
		keys, vals := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		var c kernelCounters
		for j := 1; j < len(keys) && j < len(vals); j++ {
			var dst *int64
			switch keys[j] {
			case "TCPMemoryPressures":
				dst = &c.MemoryPressures
			case "TCPRcvQDrop":
				dst = &c.RcvQDrop
			case "TCPTimeouts":
				dst = &c.Timeouts
			default:
				continue
			}
			if *dst, err = strconv.ParseInt(vals[j], 10, 64); err != nil {
				return kernelCounters{}, fmt.Errorf("/proc/net/netstat %s %q: %w", keys[j], vals[j], err)
			}
		}
		return c, nil
	}
	return kernelCounters{}, fmt.Errorf("/proc/net/netstat: no TcpExt lines")
}

func (c kernelCounters) sub(o kernelCounters) kernelCounters {
	return kernelCounters{c.MemoryPressures - o.MemoryPressures, c.RcvQDrop - o.RcvQDrop, c.Timeouts - o.Timeouts}
}
