package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/mattn/go-isatty"
	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/internal/logflags"

	"github.com/tidegate/tidegate/benchmarks/peers"
	"github.com/tidegate/tidegate/benchmarks/session"
)

// benchSessionCommand is the paired direct/proxy session benchmark.
func benchSessionCommand() *cli.Command {
	return &cli.Command{
		Name:  "session",
		Usage: "paired direct/proxy Minecraft session echo benchmark against tidegate and peer proxies",
		Description: "Clients log in offline (protocol 5) and echo PLAY packets, once straight to a fake\n" +
			"backend (`tidegate backend`, its own process) and once through each proxy under test\n" +
			"(its own process), alternating which phase goes first per repeat. Every echo is\n" +
			"checked; a run with a wrong echo or a failed phase says so and exits non-zero.\n\n" +
			"--workload sets the documented values (burst32, w1, w16, seed001); the other workload\n" +
			"flags override them. Proxy figures come from the proxy's processes: CPU ns per relayed\n" +
			"frame from /proc/PID/task/*/schedstat, RSS, and system calls per frame from perf in\n" +
			"separate passes on a fresh proxy. --rtt runs client, proxy and backend in three\n" +
			"network namespaces (scripts/netns.sh, needs root, iproute2 and sch_netem).\n" +
			"--app-rtt emulates a round-trip time without netem: every client holds each burst\n" +
			"for half of it before writing it, and the backend (--reply-delay) each echo for the\n" +
			"other half, in the direct and the proxy phases alike; the proxy itself is not delayed.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "workload", Usage: "preset: " + strings.Join(session.PresetNames(), ", ")},
			&cli.IntFlag{Name: "connections", Value: 4, Usage: "client connections"},
			&cli.IntFlag{Name: "messages", Value: 5000, Usage: "measured roundtrips per connection"},
			&cli.IntFlag{Name: "warmup", Value: 500, Usage: "untimed roundtrips per connection before measuring"},
			&cli.IntFlag{Name: "payload", Value: 1024, Usage: "PLAY packet body bytes (packet id, connection, sequence, filler)"},
			&cli.IntFlag{Name: "window", Value: 1, Usage: "bursts in flight per connection"},
			&cli.IntFlag{Name: "burst", Value: 1, Usage: "packets written back to back per burst"},
			&cli.IntFlag{Name: "repeats", Value: 3, Usage: "direct/proxy pairs per target"},
			&cli.StringFlag{Name: "target", Value: "tidegate", Usage: "proxies to measure, comma-separated: " +
				"tidegate, tidegate-raw, goproxy, haproxy, haproxy-splice, nginx"},
			&cli.IntFlag{Name: "proxy-cores", Value: 1, Usage: "threads/loops/workers of every proxy (tidegate loops, haproxy nbthread, nginx worker_processes)"},
			&cli.IntFlag{Name: "goproxy-gomaxprocs", Usage: "GOMAXPROCS of goproxy", DefaultText: "--proxy-cores"},
			&cli.IntFlag{Name: "backend-loops", Value: 1, Usage: "event loops of the fake backend"},
			&cli.IntFlag{Name: "syscall-passes", Value: -1, Usage: "extra proxy phases per target on a fresh proxy under perf, for syscalls/frame, reported as their median (-1: as many as --repeats; 0: none)"},
			&cli.BoolFlag{Name: "json", Usage: "print the result as JSON instead of a table"},
			&cli.StringFlag{Name: "report", Usage: "write report.md, result.json and PNG charts into `DIR`"},
			&cli.DurationFlag{Name: "stall-timeout", Value: 0, Usage: "fail a phase that makes no progress this long", DefaultText: "20s"},
			&cli.DurationFlag{Name: "rtt", Usage: "round-trip time per link between client, proxy and backend namespaces (e.g. 2ms)"},
			&cli.DurationFlag{Name: "app-rtt", Usage: "round-trip time emulated in user space: client and backend each hold every frame for half of it (e.g. 2ms; adds to --rtt)"},
			&cli.BoolFlag{Name: "netns", Usage: "use the three namespaces even with --rtt 0"},
			&cli.StringFlag{Name: "netns-script", Value: "scripts/netns.sh", Usage: "the namespace script"},
			&cli.StringFlag{Name: "netns-prefix", Value: "tgbench", Usage: "prefix of the namespace names"},
			&cli.StringFlag{Name: "netns-inner", Hidden: true, Usage: "internal: running inside the client namespace of this prefix"},
			&cli.StringFlag{Name: "haproxy-bin", Value: "haproxy", Usage: "HAProxy program"},
			&cli.StringFlag{Name: "tidegate-cpuprofile-dir", Usage: "write a Go CPU profile of each tidegate proxy into `DIR` (go tool pprof)"},
			&cli.StringFlag{Name: "nginx-bin", Value: "nginx", Usage: "nginx program"},
			tidegateBinFlag(),
		}, logflags.Flags()...),
		Action: runBenchSession,
	}
}

// sessionParams reads the workload: a preset, then explicit flags over it.
func sessionParams(c *cli.Context) (session.Params, error) {
	p := session.Params{
		Connections: c.Int("connections"), Messages: c.Int("messages"), Warmup: c.Int("warmup"),
		Payload: c.Int("payload"), Window: c.Int("window"), Burst: c.Int("burst"),
	}
	if name := c.String("workload"); name != "" {
		preset, err := session.Preset(name)
		if err != nil {
			return p, fmt.Errorf("--workload: %w", err)
		}
		for flag, dst := range map[string]*int{"connections": &preset.Connections, "messages": &preset.Messages,
			"warmup": &preset.Warmup, "payload": &preset.Payload, "window": &preset.Window, "burst": &preset.Burst} {
			if c.IsSet(flag) {
				*dst = c.Int(flag)
			}
		}
		p = preset
	}
	return p, p.Validate()
}

func runBenchSession(c *cli.Context) error {
	log, err := logflags.New(c)
	if err != nil {
		return err
	}
	params, err := sessionParams(c)
	if err != nil {
		return err
	}
	kinds, err := peers.ParseKinds(c.String("target"))
	if err != nil {
		return fmt.Errorf("--target: %w", err)
	}
	rtt, appRTT := c.Duration("rtt"), c.Duration("app-rtt")
	if rtt < 0 || appRTT < 0 {
		return fmt.Errorf("--rtt %v, --app-rtt %v: want no negative time", rtt, appRTT)
	}
	inner := c.String("netns-inner")
	if (rtt > 0 || c.Bool("netns")) && inner == "" {
		// Build the namespaces and run this same command inside the client's.
		exe, err := thisProgram("it again in the client namespace")
		if err != nil {
			return err
		}
		argv := append([]string{exe}, os.Args[1:]...)
		argv = append(argv, "--netns-inner", c.String("netns-prefix"))
		return session.RunInNetns(c.Context, c.String("netns-script"), c.String("netns-prefix"), rtt, argv)
	}
	ctx, stop := sessionContext(c)
	defer stop()

	tg, err := tidegateBinary(c)
	if err != nil {
		return err
	}
	opts := session.LaunchOptions{Executable: tg,
		Kinds: kinds, ProxyCores: c.Int("proxy-cores"), GoMaxProcs: c.Int("goproxy-gomaxprocs"),
		BackendLoops: c.Int("backend-loops"), Sessions: params.Connections,
		HAProxy: c.String("haproxy-bin"), Nginx: c.String("nginx-bin"),
		CPUProfileDir: c.String("tidegate-cpuprofile-dir"), ReplyDelay: appRTT / 2,
	}
	setup := session.Setup{ProxyCores: opts.ProxyCores, GoMaxProcs: opts.GoMaxProcs, BackendLoops: opts.BackendLoops, Host: session.ThisHost()}
	if appRTT > 0 {
		setup.AppRTT = appRTT.String()
	}
	if setup.GoMaxProcs == 0 {
		setup.GoMaxProcs = opts.ProxyCores
	}
	if inner != "" {
		l := session.Layout(inner)
		opts.Netns = &l
		setup.Namespaces, setup.RTT = true, rtt.String()
	}
	env, err := session.Launch(opts)
	if err != nil {
		return err
	}
	defer env.Close()
	cfg := session.Config{
		Workload: c.String("workload"), Params: params, Repeats: c.Int("repeats"), Backend: env.Backend(),
		Targets: env.Targets(), StallTimeout: c.Duration("stall-timeout"), Setup: setup, Log: log,
		AppRTT: appRTT,
	}
	var notes []string
	n := c.Int("syscall-passes")
	if n < 0 {
		n = cfg.Repeats
	}
	if n > 0 {
		if err := peers.PerfAvailable(); err != nil {
			notes = append(notes, "syscalls/frame omitted: "+err.Error())
		} else {
			cfg.StartCounted, cfg.SyscallPasses = env.StartCounted, n
		}
	}
	if isatty.IsTerminal(os.Stdout.Fd()) && !c.Bool("json") {
		cfg.Progress = session.NewBar(os.Stdout)
	}
	log.Info().Str("workload", params.String()).Strs("targets", strings.Split(c.String("target"), ",")).
		Str("backend", env.Backend()).Int("repeats", cfg.Repeats).Msg("session benchmark starting")
	res, err := session.Run(ctx, cfg)
	if res == nil {
		return err
	}
	res.Notes = append(res.Notes, notes...)
	if err != nil {
		res.Notes = append(res.Notes, "run interrupted: "+err.Error())
	}
	if c.Bool("json") {
		err = session.WriteJSON(os.Stdout, res)
	} else {
		err = session.WriteTable(os.Stdout, res)
	}
	if err != nil {
		return err
	}
	if dir := c.String("report"); dir != "" {
		if err := session.WriteReport(dir, res); err != nil {
			return err
		}
		log.Info().Str("dir", dir).Msg("report written")
	}
	if !res.OK() {
		return cli.Exit(fmt.Sprintf("session benchmark INVALID: %d wrong echoes, %d failed phases", res.Errors, res.Failed), 1)
	}
	return ctx.Err()
}
