package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/internal/logflags"

	"github.com/tidegate/tidegate/benchmarks/mcload"
	"github.com/tidegate/tidegate/benchmarks/peers"
	"github.com/tidegate/tidegate/benchmarks/session"
)

// benchHandshakeCommand is a login storm.
func benchHandshakeCommand() *cli.Command {
	return &cli.Command{
		Name:  "handshake",
		Usage: "a storm of Minecraft handshakes and Login Starts: accepted rate, refusals by reason, p99 time to play",
		Description: "Each attempt connects, sends Handshake and Login Start (offline, protocol 5), waits for\n" +
			"Login Success (accepted) or a refusal (a login Disconnect, labelled with its text, or a\n" +
			"close, reset or timeout) and closes. Without --addr it starts the fake backend and the\n" +
			"--target proxy itself. --max-failed and --max-p99-ms turn the figures into a pass/fail exit.",
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "count", Value: 5000, Usage: "logins"},
			&cli.IntFlag{Name: "parallel", Value: 64, Usage: "logins in progress at once"},
			sourcesFlag(),
			&cli.StringFlag{Name: "target", Value: "tidegate", Usage: "proxy to start: tidegate, tidegate-raw, goproxy, haproxy, haproxy-splice or nginx"},
			&cli.StringFlag{Name: "addr", Usage: "storm an already running proxy or server at this address instead"},
			&cli.IntFlag{Name: "proxy-cores", Value: 1, Usage: "threads/loops/workers of the proxy"},
			&cli.DurationFlag{Name: "timeout", Value: 10 * time.Second, Usage: "bound on each attempt"},
			&cli.IntFlag{Name: "max-failed", Value: 0, Usage: "fail if more attempts than this did not reach play (-1: no gate)"},
			&cli.Float64Flag{Name: "max-p99-ms", Usage: "fail if the p99 time to reach play exceeds this (0: no gate)"},
			&cli.BoolFlag{Name: "json", Usage: "print the result as JSON"},
			&cli.StringFlag{Name: "haproxy-bin", Value: "haproxy", Usage: "HAProxy program"},
			&cli.StringFlag{Name: "nginx-bin", Value: "nginx", Usage: "nginx program"},
			tidegateBinFlag(),
		}, logflags.Flags()...),
		Action: runBenchHandshake,
	}
}

func runBenchHandshake(c *cli.Context) error {
	log, sources, err := stormSetup(c)
	if err != nil {
		return err
	}
	ctx, stop := sessionContext(c)
	defer stop()
	addr, target := c.String("addr"), c.String("target")
	if addr == "" {
		kinds, err := peers.ParseKinds(target)
		if err != nil || len(kinds) != 1 {
			return fmt.Errorf("--target %q: want exactly one proxy (%v)", target, err)
		}
		exe, err := tidegateBinary(c)
		if err != nil {
			return err
		}
		env, err := session.Launch(session.LaunchOptions{Kinds: kinds, ProxyCores: c.Int("proxy-cores"), BackendLoops: 1, Executable: exe,
			Sessions: c.Int("parallel"), HAProxy: c.String("haproxy-bin"), Nginx: c.String("nginx-bin")})
		if err != nil {
			return err
		}
		defer env.Close()
		addr = env.Targets()[0].Addr
	} else {
		target = addr
	}
	log.Info().Str("target", target).Str("addr", addr).Int("count", c.Int("count")).Int("parallel", c.Int("parallel")).
		Msg("handshake storm starting")
	res, err := mcload.Handshake(ctx, mcload.HandshakeConfig{Addr: addr, Count: c.Int("count"), Parallel: c.Int("parallel"),
		Sources: sources, Timeout: c.Duration("timeout")})
	if res == nil {
		return err
	}
	if c.Bool("json") {
		if err := writeJSON(c, res); err != nil {
			return err
		}
	} else {
		fmt.Printf("handshake %s: %d attempts, %d in parallel, in %.2fs\n", target, res.Count, res.Parallel, res.Seconds)
		fmt.Printf("accepted %d (%.0f/s), failed %d; time to play p50 %.3f ms, p99 %.3f ms, max %.3f ms\n",
			res.Accepted, res.AcceptedPerSec, res.Failed, res.P50Ms, res.P99Ms, res.MaxMs)
		for _, k := range res.SortedRejections() {
			fmt.Printf("refused: %s x%d\n", k, res.Rejections[k])
		}
	}
	if err != nil {
		return err
	}
	var fails []string
	if m := c.Int("max-failed"); m >= 0 && res.Failed > m {
		fails = append(fails, fmt.Sprintf("%d attempts failed, at most %d allowed", res.Failed, m))
	}
	if m := c.Float64("max-p99-ms"); m > 0 && res.P99Ms > m {
		fails = append(fails, fmt.Sprintf("p99 time to play %.3f ms exceeds %.3f ms", res.P99Ms, m))
	}
	if len(fails) > 0 {
		return cli.Exit(fmt.Sprintf("handshake storm FAILED: %v", fails), 1)
	}
	return nil
}
