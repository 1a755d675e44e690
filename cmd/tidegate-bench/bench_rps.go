package main

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/rps"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/internal/logflags"
)

func benchRPSCommand() *cli.Command {
	return &cli.Command{
		Name:  "rps",
		Usage: "TLV request/response load: requests per second and latency, optionally tidegate vs the goroutine server",
		Description: "Each client keeps one keep-alive connection and --pipeline requests in flight (1 = strict\n" +
			"request/response, as in the design document), checks every response's type, length and\n" +
			"content, and counts a response later than --timeout as a failure. Clients run on event loops,\n" +
			"not a goroutine each. RPS = successful requests / wall time; latency from an HdrHistogram.\n\n" +
			"--spawn tidegate|goroutine starts the server itself (--strategy single: one core, multi: all),\n" +
			"by default as a child process (`tidegate serve` from --tidegate-bin, or this program's `peer\n" +
			"tlv-goroutine`) whose RSS and CPU are measured on their own;\n" +
			"--spawn both (or --compare) runs tidegate and the goroutine server --repeats times each, in\n" +
			"alternating order, and prints medians [min–max] and the ratios.\n\n" +
			"It exits non-zero when any request errored (a wrong, lost, duplicated or reordered\n" +
			"response) or timed out, or a server could not be started, measured or stopped; a failed\n" +
			"run is printed and left out of the medians.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "addr", Usage: "server address host:port (with --spawn none)"},
			&cli.IntFlag{Name: "clients", Value: 5, Usage: "client connections"},
			&cli.IntFlag{Name: "payloads", Value: 200_000, Usage: "requests per client"},
			&cli.IntFlag{Name: "warmups", Value: 1, Usage: "whole runs made and discarded before the measured one"},
			&cli.IntFlag{Name: "payload-size", Value: rps.DefaultPayloadSize, Usage: "request body bytes"},
			&cli.IntFlag{Name: "pipeline", Value: rps.DefaultPipeline, Usage: "requests in flight per client (1: strict request/response)"},
			&cli.DurationFlag{Name: "timeout", Value: rps.DefaultTimeout, Usage: "reply timeout; a late reply counts as a failure"},
			&cli.IntFlag{Name: "loops", Value: runtime.NumCPU(), Usage: "client event loops"},
			&cli.BoolFlag{Name: "json", Usage: "print the report as JSON instead of tables"},
			&cli.StringFlag{Name: "spawn", Value: "none", Usage: "server to start: none (use --addr), tidegate, goroutine or both"},
			&cli.BoolFlag{Name: "compare", Usage: "same as --spawn both"},
			&cli.StringFlag{Name: "strategy", Value: string(rps.Multi), Usage: "cores of a spawned server: single (1) or multi (all)"},
			&cli.StringFlag{Name: "spawn-mode", Value: string(rps.Child), Usage: "child (own process, RSS and CPU measured) or inprocess"},
			&cli.IntFlag{Name: "repeats", Value: 0, Usage: "measurements per spawned server, each on a fresh server", DefaultText: "3 with both, else 1"},
			tidegateBinFlag(),
		}, logflags.Flags()...),
		Action: withLog(func(c *cli.Context, log zerolog.Logger) error {
			load := rps.Config{
				Addr:        c.String("addr"),
				Clients:     c.Int("clients"),
				Payloads:    c.Int("payloads"),
				Warmups:     c.Int("warmups"),
				PayloadSize: c.Int("payload-size"),
				Pipeline:    c.Int("pipeline"),
				Timeout:     c.Duration("timeout"),
				Loops:       c.Int("loops"),
				Logger:      log,
			}
			spawn := c.String("spawn")
			if c.Bool("compare") {
				spawn = "both"
			}
			report := rps.Report{Time: time.Now().UTC(), Machine: rps.ThisMachine(), Args: os.Args, Spawn: spawn}
			out := c.App.Writer
			if spawn == "none" {
				if load.Addr == "" {
					return fmt.Errorf("--spawn none needs --addr")
				}
				res, err := rps.Run(c.Context, load)
				if err != nil {
					return err
				}
				if c.Bool("json") {
					report.Result = &res
					err = writeJSON(c, report)
				} else {
					err = rps.WriteTable(out, res)
				}
				if err != nil {
					return err
				}
				if ferr := res.Failure(); ferr != nil {
					return cli.Exit(fmt.Sprintf("rps benchmark FAILED: %v", ferr), 1)
				}
				return nil
			}
			var kinds []rps.ServerKind
			switch spawn {
			case "tidegate":
				kinds = []rps.ServerKind{rps.Tidegate}
			case "goroutine":
				kinds = []rps.ServerKind{rps.Goroutine}
			case "both":
				kinds = []rps.ServerKind{rps.Tidegate, rps.Goroutine}
			default:
				return fmt.Errorf("--spawn %q: want none, tidegate, goroutine or both", spawn)
			}
			repeats := c.Int("repeats")
			if repeats == 0 {
				repeats = 1
				if len(kinds) == 2 {
					repeats = 3
				}
			}
			sc := rps.SpawnConfig{
				Strategy: rps.Strategy(c.String("strategy")),
				Mode:     rps.SpawnMode(c.String("spawn-mode")),
				Logger:   log,
			}
			if sc.Mode == rps.Child {
				var err error
				if sc.ChildCommand, err = childServerCommand(c, kinds); err != nil {
					return err
				}
			}
			ms, err := rps.Compare(c.Context, load, sc, kinds, repeats)
			if err != nil {
				return err
			}
			sum := rps.Summarize(ms, kinds)
			if c.Bool("json") {
				report.Strategy, report.Mode, report.Repeats = sc.Strategy, sc.Mode, repeats
				report.Measurements, report.Summary = ms, &sum
				err = writeJSON(c, report)
			} else if err = rps.WriteMeasurements(out, ms); err == nil {
				fmt.Fprintln(out)
				err = rps.WriteSummary(out, sum)
			}
			if err != nil {
				return err
			}
			if ferr := rps.Failed(ms); ferr != nil {
				return cli.Exit(fmt.Sprintf("rps benchmark FAILED (failed runs are left out of the medians): %v", ferr), 1)
			}
			return nil
		}),
	}
}

// childServerCommand returns the command lines of the spawned servers under
// test: `tidegate serve` from --tidegate-bin, and this program's `peer
// tlv-goroutine`. It only looks for the tidegate binary when kinds has it.
func childServerCommand(c *cli.Context, kinds []rps.ServerKind) (rps.ChildCommandFunc, error) {
	logLevel := c.String("log-level")
	if logLevel == "info" || logLevel == "debug" {
		logLevel = "warn" // keep the children's start-up lines out of the tables
	}
	self, err := thisProgram("the goroutine server")
	if err != nil {
		return nil, err
	}
	var tg string
	if slices.Contains(kinds, rps.Tidegate) {
		if tg, err = tidegateBinary(c); err != nil {
			return nil, err
		}
	}
	return func(kind rps.ServerKind, addr string, loops int) []string {
		if kind == rps.Goroutine {
			return []string{self, "peer", "tlv-goroutine", "--listen", addr, "--log-level", logLevel}
		}
		return []string{tg, "serve", "--listen", addr, "--loops", strconv.Itoa(loops), "--log-level", logLevel}
	}, nil
}

func writeJSON(c *cli.Context, v any) error { return harness.WriteJSON(c.App.Writer, v) }
