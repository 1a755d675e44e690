package main

import (
	"runtime"
	"strings"

	"github.com/tidegate/tidegate/reactor"

	"github.com/urfave/cli/v2"
)

// defaultBufferBudget is --buffer-budget's default for serve and backend:
// 256 MiB is 128 connections at the default high watermark, so a few fast
// clients never meet it, while 1,000 (or 9,000) clients that stop reading
// hold about 256 MiB plus their residue (docs/tlv.md) rather than 2 MiB
// each; with the residue and the Go heap's headroom it fits a 1 GiB
// container. The proxy's limits.buffer_budget is 1 GiB because it carries
// two sockets' worth a session and is sized for 9,000 sessions.
const defaultBufferBudget = 256 << 20

// reactorFlags are the event-loop settings shared by the servers.
func reactorFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "loops", Value: runtime.NumCPU(), DefaultText: "one per core", Usage: "number of event loops"},
		&cli.BoolFlag{Name: "reuseport", Usage: "set SO_REUSEPORT so several processes can share the port (Linux)"},
		&cli.IntFlag{Name: "read-buffer", Value: reactor.DefaultReadBufferCap, Usage: "bytes one read takes from a socket"},
		&cli.IntFlag{Name: "high-watermark", Value: reactor.DefaultHighWatermark, Usage: "queued output bytes at which the producing connection stops being read"},
		&cli.IntFlag{Name: "low-watermark", Value: reactor.DefaultLowWatermark, Usage: "queued output bytes under which it is read again"},
		&cli.Int64Flag{Name: "buffer-budget", Value: defaultBufferBudget, Usage: "most output `BYTES` queued in the whole process: past it, a connection whose output holds more than " +
			"16 KiB stops being read until that drains (its requests wait in the kernel); 0 disables (only the watermarks bound it)"},
		&cli.DurationFlag{Name: "linger", Value: reactor.DefaultLinger, Usage: "how long a close waits for queued output to drain; past it the connection is reset (RST), counted and logged"},
		&cli.IntFlag{Name: "max-conns", Usage: "accepted connections open at once; past it new ones wait in the listen backlog " +
			"(0: only the descriptor limit bounds them; a limit that cannot fit in it is refused at start, exit status 2)"},
	}
}

// reactorConfig reads reactorFlags; listen is a comma-separated list of addresses.
func reactorConfig(c *cli.Context, listen string) reactor.Config {
	return reactor.Config{
		Addrs:         strings.Split(listen, ","),
		Loops:         c.Int("loops"),
		ReusePort:     c.Bool("reuseport"),
		ReadBufferCap: c.Int("read-buffer"),
		HighWatermark: c.Int("high-watermark"),
		LowWatermark:  c.Int("low-watermark"),
		Linger:        c.Duration("linger"),
		MaxConns:      c.Int("max-conns"),
		BufferBudget:  c.Int64("buffer-budget"),
	}
}

// boundAddrs returns the bound address of each of s's listeners, which
// tells the ports chosen for ":0".
func boundAddrs(s *reactor.Server) []string {
	var out []string
	for i := range s.Config().Addrs {
		if a, err := s.Addr(i); err == nil {
			out = append(out, a.String())
		}
	}
	return out
}
