package main

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/internal/logflags"

	"github.com/tidegate/tidegate/benchmarks/fdlimit"
	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/peers"
	"github.com/tidegate/tidegate/benchmarks/players"
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
			"other half, in the direct and the proxy phases alike; the proxy itself is not delayed.\n\n" +
			"--workload players is open loop instead: --sessions sessions log in and each sends --rate\n" +
			"PLAY frames a second (bodies of --frame-min to --frame-max bytes, sizes from --seed), spread\n" +
			"evenly over each second, whether or not the replies came. The backend, started with\n" +
			"--chunk-replies, echoes each frame, except that one in --chunk-every of a session's frames\n" +
			"asks for a frame of --chunk-min to --chunk-max bytes instead, as chunk data is. After\n" +
			"--warmup the sends of --duration are measured; every reply is checked, and one lost,\n" +
			"duplicated, corrupted or still missing --drain after the last send invalidates the run. It\n" +
			"reports the relayed frames both ways, proxy CPU ns per relayed frame and its ratio to the best\n" +
			"peer, round trips p50/p99/p99.9 direct and through each proxy and the latency the proxy added,\n" +
			"proxy RSS per session, how late the load generator's sends went out, and the issue #14 goals\n" +
			"(tidegate's CPU/frame at most 0.8x the best peer's, its added p99 no worse). A proxy holds two\n" +
			"descriptors per session: a --sessions that cannot fit in the descriptor limit is refused.\n\n" +
			"Targets that terminate the login (issue #22; players workload only): tidegate-offline and tidegate-online\n" +
			"(login: offline or online) and Gate in full mode (gate: onlineMode true, gate-offline: false; --gate-bin,\n" +
			"a Gate its users built), each forwarding to the backend with Velocity modern forwarding. With one of\n" +
			"them, every session logs in at protocol 764 (1.20.2) through the configuration state, follows the\n" +
			"proxy into encryption, and answers the backend's forwarding request itself in the direct phases;\n" +
			"online mode authenticates against a session server on loopback. The report adds logins/s, proxy\n" +
			"CPU per login and the issue's goals (CPU/frame at most 0.5x Gate's and 1.6x tidegate's, RSS per\n" +
			"session at most 0.25x Gate's).",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "workload", Usage: "preset: " + strings.Join(session.PresetNames(), ", ") + ", or " + session.WorkloadPlayers},
			&cli.IntFlag{Name: "connections", Value: 4, Usage: "client connections"},
			&cli.IntFlag{Name: "messages", Value: 5000, Usage: "measured roundtrips per connection"},
			&cli.StringFlag{Name: "warmup", Usage: "untimed roundtrips per connection before measuring (echo workloads), " +
				"or the untimed sending before measuring (players, a duration)", DefaultText: "500; players: " + players.Default.Warmup.String()},
			&cli.IntFlag{Name: "payload", Value: 1024, Usage: "PLAY packet body bytes (packet id, connection, sequence, filler)"},
			&cli.IntFlag{Name: "window", Value: 1, Usage: "bursts in flight per connection"},
			&cli.IntFlag{Name: "burst", Value: 1, Usage: "packets written back to back per burst"},
			&cli.IntFlag{Name: "sessions", Value: players.Default.Sessions, Usage: "players: sessions, each on its own connection"},
			&cli.IntFlag{Name: "rate", Value: players.Default.Rate, Usage: "players: frames a second each session sends (and gets back)"},
			&cli.DurationFlag{Name: "duration", Value: players.Default.Duration, Usage: "players: the measured sending time"},
			&cli.DurationFlag{Name: "drain", Value: players.Default.Drain, Usage: "players: how long after the last send every reply may take"},
			&cli.IntFlag{Name: "frame-min", Value: players.Default.FrameMin, Usage: "players: smallest frame body sent, bytes"},
			&cli.IntFlag{Name: "frame-max", Value: players.Default.FrameMax, Usage: "players: largest frame body sent, bytes"},
			&cli.IntFlag{Name: "chunk-every", Value: players.Default.ChunkEvery, Usage: "players: one frame in this many of a session asks for a chunk-sized reply (0: none)"},
			&cli.IntFlag{Name: "chunk-min", Value: players.Default.ChunkMin, Usage: "players: smallest chunk reply body, bytes"},
			&cli.IntFlag{Name: "chunk-max", Value: players.Default.ChunkMax, Usage: "players: largest chunk reply body, bytes"},
			&cli.Uint64Flag{Name: "seed", Value: players.Default.Seed, Usage: "players: seed of the frame and chunk sizes"},
			&cli.IntFlag{Name: "senders", Value: players.Default.Senders, Usage: "players: goroutines writing the sessions' frames"},
			&cli.DurationFlag{Name: "send-tick", Value: players.Default.SendTick, Usage: "players: a sender wakes at most this often and writes every frame then due"},
			&cli.IntFlag{Name: "repeats", Value: 3, Usage: "direct/proxy pairs per target"},
			&cli.StringFlag{Name: "target", Value: "tidegate", Usage: "proxies to measure, comma-separated: " +
				"tidegate, tidegate-raw, goproxy, haproxy, haproxy-splice, nginx, tidegate-offline, tidegate-online, gate, gate-offline"},
			&cli.StringFlag{Name: "gate-bin", Usage: "Gate's program (`PATH`), for the gate targets"},
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
			haproxyBinFlag(),
			&cli.StringFlag{Name: "tidegate-cpuprofile-dir", Usage: "write a Go CPU profile of each tidegate proxy into `DIR` (go tool pprof)"},
			tidegateEnvFlag("GOMAXPROCS=1, GOGC=50"),
			nginxBinFlag(),
			tidegateBinFlag(),
		}, logflags.Flags()...),
		Action: runBenchSession,
	}
}

// Flags that belong to one kind of workload.
var (
	echoFlags    = []string{"connections", "messages", "payload", "window", "burst"}
	playersFlags = []string{"sessions", "rate", "duration", "drain", "frame-min", "frame-max", "chunk-every", "chunk-min", "chunk-max", "seed", "senders", "send-tick"}
)

// sessionParams reads the workload: a preset, then explicit flags over it;
// for --workload players, the players workload instead (nil otherwise).
func sessionParams(c *cli.Context) (session.Params, *players.Params, error) {
	name := strings.ToLower(strings.TrimSpace(c.String("workload")))
	players := name == session.WorkloadPlayers
	own, other := echoFlags, playersFlags
	if players {
		own, other = playersFlags, echoFlags
	}
	for _, f := range other {
		if c.IsSet(f) {
			return session.Params{}, nil, fmt.Errorf("--%s does not apply to --workload %s (its flags: --%s, --warmup)",
				f, workloadLabel(name), strings.Join(own, ", --"))
		}
	}
	if players {
		p, err := playersParams(c)
		return session.Params{}, &p, err
	}
	warmup := 500
	if c.IsSet("warmup") {
		n, err := strconv.Atoi(c.String("warmup"))
		if err != nil {
			return session.Params{}, nil, fmt.Errorf("--warmup %q: want a number of roundtrips (a duration is for --workload players)", c.String("warmup"))
		}
		warmup = n
	}
	p := session.Params{
		Connections: c.Int("connections"), Messages: c.Int("messages"), Warmup: warmup,
		Payload: c.Int("payload"), Window: c.Int("window"), Burst: c.Int("burst"),
	}
	if name != "" {
		preset, err := session.Preset(name)
		if err != nil {
			return p, nil, fmt.Errorf("--workload: %w", err)
		}
		for flag, dst := range map[string]*int{"connections": &preset.Connections, "messages": &preset.Messages,
			"payload": &preset.Payload, "window": &preset.Window, "burst": &preset.Burst} {
			if c.IsSet(flag) {
				*dst = c.Int(flag)
			}
		}
		if c.IsSet("warmup") {
			preset.Warmup = warmup
		}
		p = preset
	}
	return p, nil, p.Validate()
}

// workloadLabel names a --workload value for messages.
func workloadLabel(name string) string {
	if name == "" {
		return "(echo, custom)"
	}
	return name
}

// playersParams reads the players workload's flags.
func playersParams(c *cli.Context) (players.Params, error) {
	p := players.Params{
		Sessions: c.Int("sessions"), Rate: c.Int("rate"), Warmup: players.Default.Warmup, Duration: c.Duration("duration"),
		Drain: c.Duration("drain"), FrameMin: c.Int("frame-min"), FrameMax: c.Int("frame-max"), ChunkEvery: c.Int("chunk-every"),
		ChunkMin: c.Int("chunk-min"), ChunkMax: c.Int("chunk-max"), Seed: c.Uint64("seed"), Senders: c.Int("senders"),
		SendTick: c.Duration("send-tick"),
	}
	if c.IsSet("warmup") {
		d, err := time.ParseDuration(c.String("warmup"))
		if err != nil {
			return p, fmt.Errorf("--warmup %q: want a duration such as 5s for --workload players: %w", c.String("warmup"), err)
		}
		p.Warmup = d
	}
	if err := p.Validate(); err != nil {
		return p, err
	}
	// The hard limit: the processes of a run (this one, the backend, the
	// proxies) may raise their soft limits to it, and inherit it.
	limit, err := fdlimit.Read()
	if err != nil {
		return p, err
	}
	return p, players.CheckDescriptors(p.Sessions, limit.Hard)
}

func runBenchSession(c *cli.Context) error {
	log, err := logflags.New(c)
	if err != nil {
		return err
	}
	params, players, err := sessionParams(c)
	if err != nil {
		return err
	}
	kinds, err := peers.ParseKinds(c.String("target"))
	if err != nil {
		return fmt.Errorf("--target: %w", err)
	}
	tgEnv, err := tidegateEnv(c)
	if err != nil {
		return err
	}
	if session.Modern(kinds) && players == nil {
		return fmt.Errorf("--target %s: the targets that terminate the login need --workload %s", c.String("target"), session.WorkloadPlayers)
	}
	rtt, appRTT := c.Duration("rtt"), c.Duration("app-rtt")
	if rtt < 0 || appRTT < 0 {
		return fmt.Errorf("--rtt %v, --app-rtt %v: want no negative time", rtt, appRTT)
	}
	if players != nil && appRTT > 0 {
		return fmt.Errorf("--app-rtt %v: the players workload does not emulate a round-trip time (--rtt does, with netem)", appRTT)
	}
	sessions := params.Connections
	if players != nil {
		sessions = players.Sessions
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
	opts := launchOptions(c, kinds, tg)
	opts.BackendLoops, opts.Sessions, opts.ChunkReplies = c.Int("backend-loops"), sessions, players != nil
	opts.CPUProfileDir, opts.ReplyDelay, opts.TidegateEnv = c.String("tidegate-cpuprofile-dir"), appRTT/2, tgEnv
	opts.Gate = c.String("gate-bin")
	setup := session.Setup{ProxyCores: opts.ProxyCores, GoMaxProcs: opts.GoMaxProcs, BackendLoops: opts.BackendLoops, Host: harness.ThisHost()}
	if appRTT > 0 {
		setup.AppRTT = appRTT.String()
	}
	setup.GoMaxProcs = cmp.Or(setup.GoMaxProcs, opts.ProxyCores)
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
	if players != nil && session.Modern(kinds) {
		players.Modern, players.VelocitySecret = true, env.VelocitySecret()
	}
	cfg := session.Config{
		Workload: c.String("workload"), Params: params, Players: players, Repeats: c.Int("repeats"), Backend: env.Backend(),
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
	flags := params.String()
	if players != nil {
		flags = players.String()
	}
	log.Info().Str("workload", flags).Strs("targets", strings.Split(c.String("target"), ",")).
		Str("backend", env.Backend()).Int("repeats", cfg.Repeats).Msg("session benchmark starting")
	res, err := session.Run(ctx, cfg)
	if res == nil {
		return err
	}
	res.Notes = append(res.Notes, notes...)
	if players != nil && players.Modern {
		res.Notes = append(res.Notes, modernNotes(opts.Gate, env.SessionServerAnswers())...)
	}
	if err != nil {
		res.Notes = append(res.Notes, "run interrupted: "+err.Error())
	}
	if err := printResult(c, res, session.WriteJSON, session.WriteTable); err != nil {
		return err
	}
	if dir := c.String("report"); dir != "" {
		if err := session.WriteReport(dir, res); err != nil {
			return err
		}
		log.Info().Str("dir", dir).Msg("report written")
	}
	if !res.OK() {
		return cli.Exit(fmt.Sprintf("session benchmark INVALID: %d %s, %d failed phases", res.Errors, res.ErrorsLabel(), res.Failed), 1)
	}
	return ctx.Err()
}

// modernNotes say how the sessions of a run with targets that terminate
// the login logged in, and which Gate ran.
func modernNotes(gate string, answers int64) []string {
	notes := []string{"Sessions logged in at protocol 764 (1.20.2), through the configuration state, with echo frames of packet ID 0x7E " +
		"(unused in 1.20.2's play state); the backend (tidegate backend --forwarding velocity) expected Velocity modern forwarding, " +
		"which the terminating targets answered and the direct phases' and transparent targets' clients answered themselves. " +
		"Online mode: the proxy's Encryption Request answered with RSA-1024, AES/CFB8 both ways, hasJoined answered by a session " +
		"server on loopback in this process (" + strconv.FormatInt(answers, 10) + " answers), which the clients do not call join on. " +
		"Logins/s and CPU µs/login span the proxy phase's logins, 64 at a time, from the first connection to the last session in play."}
	if gate != "" {
		out, err := exec.Command(gate, "--version").CombinedOutput()
		v := strings.TrimSpace(string(out))
		if err != nil {
			v = "(--version failed: " + err.Error() + ")"
		}
		notes = append(notes, "Gate: "+gate+", "+strings.ReplaceAll(v, "\n", "; ")+"; GOMAXPROCS as tidegate's (loops + 1).")
	}
	return notes
}
