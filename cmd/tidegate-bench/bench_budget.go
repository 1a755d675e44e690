package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/internal/logflags"

	"github.com/tidegate/tidegate/benchmarks/budgetload"
)

// benchBudgetCommand floods sessions toward stalled readers through a
// proxy child and checks its RSS against limits.buffer_budget.
func benchBudgetCommand() *cli.Command {
	return &cli.Command{
		Name:  "budget",
		Usage: "flood N sessions toward stalled backend readers: the proxy's peak RSS against limits.buffer_budget + 64 MiB, then every byte verified",
		Description: "For each round and each --budgets value (alternating) a fresh `tidegate proxy` child is\n" +
			"started with a raw listener relaying to a backend in this process whose sockets have a\n" +
			"small SO_RCVBUF (--rcvbuf) and that reads nothing but each session's 8-byte header. N\n" +
			"clients connect (RSS baseline), then each sends --bytes deterministic bytes as fast as the\n" +
			"proxy takes them. The proxy's VmRSS is sampled every --sample until its peak has not grown\n" +
			"by more than 1 MiB or 1% for --stable-for (or --flood-timeout); then every backend\n" +
			"connection reads to the end and each session's byte count and SHA-256 are compared with\n" +
			"what its client sent. Kernel socket memory is not in RSS. It exits non-zero on any\n" +
			"mismatch, error or timeout; a peak over budget + 64 MiB is reported, not an error.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "budgets", Value: "256MiB,1GiB,64GiB", Usage: "limits.buffer_budget values, comma-separated (KiB, MiB, GiB suffixes); 64GiB is effectively off"},
			&cli.IntFlag{Name: "sessions", Value: budgetload.DefaultSessions, Usage: "flooding sessions (4 descriptors each between this tool and the proxy)"},
			&cli.StringFlag{Name: "bytes", Value: "8MiB", Usage: "bytes each session sends"},
			&cli.IntFlag{Name: "repeats", Value: 3, Usage: "rounds over --budgets"},
			&cli.StringFlag{Name: "rcvbuf", Value: "16KiB", Usage: "SO_RCVBUF of the backend's sockets"},
			&cli.IntFlag{Name: "loops", Usage: "the proxy's event loops (0: one per core)"},
			&cli.DurationFlag{Name: "sample", Value: budgetload.DefaultSample, Usage: "RSS sampling interval"},
			&cli.DurationFlag{Name: "stable-for", Value: budgetload.DefaultStableFor, Usage: "how long the peak RSS must not grow to end the flood"},
			&cli.DurationFlag{Name: "flood-timeout", Value: budgetload.DefaultFloodTimeout, Usage: "longest flood without a plateau"},
			&cli.DurationFlag{Name: "drain-timeout", Value: budgetload.DefaultDrainTimeout, Usage: "longest drain, from release to the last verified session"},
			&cli.StringFlag{Name: "heap-profile-dir", Usage: "start the proxy with --metrics-listen anyway and save its /debug/pprof/heap at each plateau into `DIR`"},
			&cli.BoolFlag{Name: "no-metrics", Usage: "do not start the proxy with --metrics-listen (no paused-connection or heap figures)"},
			tidegateBinFlag(),
		}, logflags.Flags()...),
		Action: runBenchBudget,
	}
}

func runBenchBudget(c *cli.Context) error {
	if _, err := flagsOnly(c, "budget"); err != nil {
		return err
	}
	budgets, err := budgetload.ParseSizes(c.String("budgets"))
	if err != nil {
		return fmt.Errorf("--budgets: %w", err)
	}
	size, err := budgetload.ParseSize(c.String("bytes"))
	if err != nil {
		return fmt.Errorf("--bytes: %w", err)
	}
	rcv, err := budgetload.ParseSize(c.String("rcvbuf"))
	if err != nil {
		return fmt.Errorf("--rcvbuf: %w", err)
	}
	dir := c.String("heap-profile-dir")
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("--heap-profile-dir: %w", err)
		}
	}
	exe, err := tidegateBinary(c)
	if err != nil {
		return err
	}
	ctx, stop := sessionContext(c)
	defer stop()
	base := budgetload.Config{Executable: exe, Sessions: c.Int("sessions"), Bytes: size, RcvBuf: int(rcv),
		Loops: c.Int("loops"), Sample: c.Duration("sample"), StableFor: c.Duration("stable-for"),
		FloodTimeout: c.Duration("flood-timeout"), DrainTimeout: c.Duration("drain-timeout"), Metrics: !c.Bool("no-metrics") || dir != ""}
	trials, err := budgetload.Series(ctx, base, budgets, c.Int("repeats"), dir, func(t budgetload.Trial) {
		fmt.Fprintf(os.Stderr, "budget %s: baseline %d MiB, peak %d MiB (drain %d MiB), stable %v after %.1fs, drain %.1fs, %d/%d verified, paused %d, heap %d MiB %v\n",
			budgetload.FormatSize(t.Budget), t.BaselineRSS>>20, t.PeakRSS>>20, t.DrainPeakRSS>>20, t.Stable, t.Flood.Seconds(),
			t.Drain.Seconds(), t.Verified, t.Sessions, t.Paused, t.HeapInuse>>20, t.Failures())
	})
	if werr := budgetload.WriteTable(os.Stdout, trials); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		return err
	}
	return budgetload.Failed(trials)
}
