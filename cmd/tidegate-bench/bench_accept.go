package main

import (
	"errors"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/internal/logflags"

	"github.com/tidegate/tidegate/benchmarks/acceptload"
)

// benchAcceptCommand measures the CPU a TLV server spends per accepted
// connection, and the accept rate.
func benchAcceptCommand() *cli.Command {
	return &cli.Command{
		Name:  "accept",
		Usage: "short connections against `tidegate serve` (one request each): conns/s, latency, server CPU and syscalls per accepted connection; compares binaries",
		Description: "P workers each loop: connect, send one small TLV request without the keep-alive bit, read\n" +
			"the whole response (checked byte for byte), read EOF, close; N connections in all. Latency\n" +
			"is from the start of the connect to the last response byte.\n\n" +
			"With --server-bin (repeated, or comma-separated) each binary is started for every trial as\n" +
			"`BIN serve --listen 127.0.0.1:PORT --loops L` on a free port, warmed up with --warmup\n" +
			"connections, then measured; the server's CPU over the measured run comes from\n" +
			"/proc/PID/task/*/schedstat, divided by N. The binaries alternate over --repeats (the order\n" +
			"rotated by one each repeat); figures are median [min–max], and each binary's medians are\n" +
			"divided by the first binary's (new/old: give the old binary first). --syscalls adds\n" +
			"--repeats more trials per binary under perf stat -e raw_syscalls:sys_enter, counting only\n" +
			"the measured run (their CPU is not reported).\n" +
			"Without --server-bin it runs against --addr, and reads the CPU of --pid when given.\n\n" +
			"It exits non-zero when any connection failed (error, timeout, wrong or extra byte), a\n" +
			"server did not start or exited, or a trial could not run.",
		Flags: append([]cli.Flag{
			&cli.StringSliceFlag{Name: "server-bin", Usage: "tidegate binary to start as the server, repeated or comma-separated (the first is the baseline of the ratios)"},
			&cli.StringFlag{Name: "addr", Usage: "a running TLV server's host:port (instead of --server-bin)"},
			&cli.IntFlag{Name: "pid", Usage: "with --addr: the server's process id, to read its CPU"},
			&cli.IntFlag{Name: "conns", Aliases: []string{"n"}, Value: acceptload.DefaultConns, Usage: "connections measured per trial (N)"},
			&cli.IntFlag{Name: "parallel", Aliases: []string{"p"}, Value: acceptload.DefaultParallel, Usage: "workers, each making one connection after another (P)"},
			&cli.IntFlag{Name: "body", Value: acceptload.DefaultBody, Usage: "request body bytes (at least 8)"},
			&cli.DurationFlag{Name: "timeout", Value: acceptload.DefaultTimeout, Usage: "deadline of each connection, from connect start to EOF"},
			&cli.IntFlag{Name: "warmup", Value: acceptload.DefaultWarmup, Usage: "connections made before each measured run, not measured (negative: none)"},
			&cli.IntFlag{Name: "repeats", Value: acceptload.DefaultRepeats, Usage: "trials per server, each on a fresh server process"},
			&cli.IntFlag{Name: "loops", Value: acceptload.DefaultLoops, Usage: "event loops of every started server (serve --loops)"},
			&cli.IntFlag{Name: "gomaxprocs", Usage: "GOMAXPROCS of every started server (0: unchanged)"},
			&cli.BoolFlag{Name: "syscalls", Usage: "--repeats more trials per binary under perf, counting the server's system calls per connection"},
			&cli.BoolFlag{Name: "json", Usage: "print the result as JSON instead of tables"},
		}, logflags.Flags()...),
		Action: runBenchAccept,
	}
}

func runBenchAccept(c *cli.Context) error {
	log, err := flagsOnly(c, "accept")
	if err != nil {
		return err
	}
	var bins []string
	for _, b := range c.StringSlice("server-bin") {
		if b = strings.TrimSpace(b); b != "" {
			bins = append(bins, b)
		}
	}
	var servers []acceptload.Server
	switch {
	case len(bins) > 0 && c.String("addr") != "":
		return errors.New("accept: give --server-bin or --addr, not both")
	case len(bins) > 0:
		if servers, err = acceptload.BinaryServers(bins); err != nil {
			return err
		}
		if c.Int("pid") != 0 {
			return errors.New("accept: --pid goes with --addr; a started server's pid is known")
		}
	case c.String("addr") != "":
		servers = []acceptload.Server{{Label: c.String("addr"), Addr: c.String("addr"), PID: c.Int("pid")}}
		if c.Bool("syscalls") {
			return errors.New("accept: --syscalls needs --server-bin (perf starts the server)")
		}
	default:
		return errors.New("accept: give --server-bin PATH (repeatable) or --addr HOST:PORT")
	}
	cfg := acceptload.CompareConfig{
		Servers: servers,
		Load: acceptload.LoadConfig{Conns: c.Int("conns"), Parallel: c.Int("parallel"), Body: c.Int("body"),
			Timeout: c.Duration("timeout")},
		Repeats: c.Int("repeats"), Warmup: c.Int("warmup"), Loops: c.Int("loops"), GoMaxProcs: c.Int("gomaxprocs"),
		Syscalls: c.Bool("syscalls"), Log: log,
	}
	ctx, stop := sessionContext(c)
	defer stop()
	started := time.Now().UTC()
	cmp, err := acceptload.Compare(ctx, cfg)
	if err != nil {
		return err
	}
	rep := acceptload.Report{Comparison: cmp, Meta: acceptload.Meta{
		Meta:  runMeta(started),
		Conns: cfg.Load.Conns, Parallel: cfg.Load.Parallel, Body: cfg.Load.Body, Warmup: cfg.Warmup,
		Repeats: cfg.Repeats, Loops: cfg.Loops, GoMaxProcs: cfg.GoMaxProcs,
	}}
	if err := printResult(c, rep, acceptload.WriteJSON, acceptload.WriteTable); err != nil {
		return err
	}
	if !cmp.OK {
		return failedExit("accept", cmp.Failures)
	}
	return nil
}
