package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/internal/logflags"

	"github.com/tidegate/tidegate/benchmarks/drainload"
)

// benchDrainCommand measures what paused connections cost a server while
// nothing drains, and how soon it reads them again once their peer reads.
func benchDrainCommand() *cli.Command {
	return &cli.Command{
		Name:  "drain",
		Usage: "pause N connections on `tidegate serve` builds: CPU while nothing drains, resume latency once the peer reads",
		Description: "For each repeat and each --server (the order rotated by one each repeat) a fresh `BINARY serve`\n" +
			"is started. Its CPU is sampled with no connection, then --conns connections pipeline echo requests\n" +
			"and never read until the server stops reading every one of them (its paused gauge counts them\n" +
			"all), and its CPU and wake-ups are sampled again over --window. Then the connections resume one\n" +
			"at a time while the others stay paused: resume latency runs from the client starting to read to\n" +
			"the server reading the connection again; 'after drain' subtracts the moment the client had read\n" +
			"everything the server had queued before it paused. Every response byte is checked.\n\n" +
			"It exits non-zero when a connection lost or reordered a byte, did not stall or resume, or a\n" +
			"server died. Linux only.",
		Flags: append([]cli.Flag{
			serverFlag(),
			tidegateBinFlag(),
			&cli.IntFlag{Name: "conns", Value: drainload.DefaultConns, Usage: "connections paused at once"},
			&cli.IntFlag{Name: "repeats", Value: drainload.DefaultRepeats, Usage: "trials per server, each on a fresh server"},
			&cli.IntFlag{Name: "loops", Value: 2, Usage: "the servers' --loops"},
			&cli.IntFlag{Name: "high-watermark", Value: drainload.DefaultHighWatermark, Usage: "the servers' --high-watermark"},
			&cli.IntFlag{Name: "low-watermark", Value: drainload.DefaultLowWatermark, Usage: "the servers' --low-watermark"},
			&cli.IntFlag{Name: "request-size", Value: drainload.DefaultRequestSize, Usage: "bytes per request, 5-byte header included"},
			&cli.IntFlag{Name: "client-rcvbuf", Value: drainload.DefaultClientBuf, Usage: "SO_RCVBUF of the client's sockets (0: autotuned)"},
			&cli.IntFlag{Name: "client-sndbuf", Value: drainload.DefaultClientBuf, Usage: "SO_SNDBUF of the client's sockets (0: autotuned)"},
			&cli.IntFlag{Name: "client-mss", Value: drainload.DefaultClientMSS, Usage: "TCP_MAXSEG of the client's sockets, which the server's side adopts (0: loopback's 64 KiB)"},
			&cli.IntFlag{Name: "fill-parallel", Value: drainload.DefaultFillParallel, Usage: "connections filling at once"},
			&cli.DurationFlag{Name: "idle-window", Value: drainload.DefaultIdleWindow, Usage: "CPU sampling window with no connection"},
			&cli.DurationFlag{Name: "window", Value: drainload.DefaultWindow, Usage: "CPU sampling window with every connection paused"},
			&cli.DurationFlag{Name: "settle", Value: drainload.DefaultSettle, Usage: "pause before each sampling window"},
			&cli.Int64Flag{Name: "tail", Value: drainload.DefaultTail, Usage: "request bytes each connection writes once it resumes"},
			&cli.DurationFlag{Name: "quiet-wait", Value: drainload.DefaultQuietWait, Usage: "how long each trial may wait for the machine to be quiet first (0: no wait)"},
			&cli.Float64Flag{Name: "quiet-cpu", Value: drainload.DefaultQuietCPU, Usage: "quiet: the rest of the machine busy under this percent of one core"},
			&cli.Float64Flag{Name: "quiet-tcp-mib", Value: drainload.DefaultQuietTCPMiB, Usage: "quiet: all TCP sockets of the machine holding under this many MiB"},
			&cli.IntFlag{Name: "noisy-retries", Value: drainload.DefaultNoisyRetries, Usage: "times a trial runs again when other programs were busier than twice --quiet-cpu during it"},
			&cli.DurationFlag{Name: "stall-timeout", Value: drainload.DefaultStallTimeout, Usage: "bound on filling every connection, and on the wait for the server's gauge"},
			&cli.DurationFlag{Name: "resume-timeout", Value: drainload.DefaultResumeTimeout, Usage: "bound on one connection's resumption"},
		}, append(resultsFlags("drain-cost"), logflags.Flags()...)...),
		Action: runBenchDrain,
	}
}

func runBenchDrain(c *cli.Context) error {
	log, err := flagsOnly(c, "drain")
	if err != nil {
		return err
	}
	servers, err := serverBuilds(c, func(label, bin string) drainload.Server { return drainload.Server{Label: label, Binary: bin} })
	if err != nil {
		return err
	}
	ctx, stop := sessionContext(c)
	defer stop()
	cfg := drainload.Config{
		Servers: servers, Repeats: c.Int("repeats"), Conns: c.Int("conns"), Loops: c.Int("loops"),
		HighWatermark: c.Int("high-watermark"), LowWatermark: c.Int("low-watermark"), RequestSize: c.Int("request-size"),
		ClientRcvBuf: c.Int("client-rcvbuf"), ClientSndBuf: c.Int("client-sndbuf"), ClientMSS: c.Int("client-mss"), FillParallel: c.Int("fill-parallel"),
		IdleWindow: c.Duration("idle-window"), Window: c.Duration("window"), Settle: c.Duration("settle"), Tail: c.Int64("tail"),
		QuietWait: c.Duration("quiet-wait"), QuietCPU: c.Float64("quiet-cpu"), QuietTCPMiB: c.Float64("quiet-tcp-mib"),
		NoisyRetries: c.Int("noisy-retries"),
		StallTimeout: c.Duration("stall-timeout"), ResumeTimeout: c.Duration("resume-timeout"), Log: log,
	}
	started := time.Now().UTC()
	res, runErr := drainload.Run(ctx, cfg)
	if res == nil {
		return runErr
	}
	res.Meta = runMeta(started)
	if err := printAndWrite(c, log, res, drainload.WriteJSON, drainload.WriteTable, drainload.WriteReport); err != nil {
		return errors.Join(runErr, err)
	}
	if runErr != nil {
		return runErr
	}
	if !res.OK {
		return failedExit("drain", res.Failures)
	}
	return nil
}

// serverFlag is --server, which serverBuilds reads.
func serverFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "server", Usage: "`LABEL=BINARY`: a tidegate build to measure; repeat the flag", DefaultText: "--tidegate-bin as 'tidegate'"}
}

// serverBuilds returns the --server flags, each made a tool's server by
// build, or --tidegate-bin as "tidegate" when there is none.
func serverBuilds[S any](c *cli.Context, build func(label, binary string) S) ([]S, error) {
	var builds []S
	for _, s := range c.StringSlice("server") {
		label, bin, ok := strings.Cut(s, "=")
		if !ok || label == "" || bin == "" {
			return nil, fmt.Errorf("--server %q: want LABEL=BINARY", s)
		}
		builds = append(builds, build(label, bin))
	}
	if len(builds) == 0 {
		exe, err := tidegateBinary(c)
		if err != nil {
			return nil, err
		}
		builds = []S{build("tidegate", exe)}
	}
	return builds, nil
}
