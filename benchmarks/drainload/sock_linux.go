package drainload

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// socketControl sets SO_RCVBUF, SO_SNDBUF and TCP_MAXSEG (each when
// positive) before connect. Small buffers bound the kernel memory a stalled
// connection holds on the client side; a small MSS (sent in the SYN) bounds
// it on the server side too, where Linux sizes an autotuned send buffer by
// segments: on loopback's 64 KiB segments 1,000 stalled connections would
// push the kernel into TCP memory pressure, and under pressure it drops
// segments and backs off for seconds.
func socketControl(rcv, snd, mss int) func(string, string, syscall.RawConn) error {
	return func(_, _ string, rc syscall.RawConn) error {
		var serr error
		set := func(fd uintptr, level, opt, v int) {
			if serr == nil && v > 0 {
				serr = unix.SetsockoptInt(int(fd), level, opt, v)
			}
		}
		err := rc.Control(func(fd uintptr) {
			set(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, rcv)
			set(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, snd)
			set(fd, unix.IPPROTO_TCP, unix.TCP_MAXSEG, mss)
		})
		if err != nil {
			return err
		}
		return serr
	}
}

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
