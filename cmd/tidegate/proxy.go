package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"

	"github.com/tidegate/tidegate/internal/adminaccess"
	"github.com/tidegate/tidegate/internal/lifecycle"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/mcbackend"
	"github.com/tidegate/tidegate/session/proxy"
	"github.com/tidegate/tidegate/session/proxy/config"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"
)

func proxyCommand(proc *lifecycle.Process) *cli.Command {
	return &cli.Command{
		Name:  "proxy",
		Usage: "run the Minecraft-aware proxy (or a raw TCP relay)",
		Description: "Routes Minecraft Java connections by the virtual host in their handshake to a backend\n" +
			"group, then relays both directions on the event loop that owns the client. Listeners in\n" +
			"raw mode relay plain TCP to one group without parsing. Without --config the embedded\n" +
			"default is used (listen 0.0.0.0:25577, one backend 127.0.0.1:25565); print it with\n" +
			"--print-default-config.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Usage: "YAML configuration `FILE`", DefaultText: "embedded"},
			&cli.BoolFlag{Name: "validate-config", Usage: "check the configuration, report every problem with its path, and exit"},
			&cli.BoolFlag{Name: "print-default-config", Usage: "print the embedded default configuration and exit"},
			&cli.BoolFlag{Name: "demo", Usage: "also start a fake Minecraft backend in-process on the first backend address"},
			&cli.StringFlag{Name: "cpuprofile", Usage: "write a Go CPU profile to `FILE` until the proxy stops"},
			metricsFlag(),
			metricsMaxConnsFlag(),
			pprofFlag(),
		}, logFlags()...),
		OnUsageError: usageError,
		Action: func(c *cli.Context) error {
			if c.Bool("print-default-config") {
				_, err := os.Stdout.Write(config.DefaultYAML())
				return err
			}
			cfg, warnings, err := config.Load(c.String("config"))
			if ce := (*config.Error)(nil); errors.As(err, &ce) {
				return configError(fmt.Errorf("configuration is invalid:\n%w", err))
			} else if err != nil {
				return configError(err)
			}
			if c.Bool("validate-config") {
				fmt.Fprintln(c.App.Writer, "configuration is valid")
				if len(warnings) > 0 {
					fmt.Fprintf(c.App.Writer, "warnings:\n%v\n", &config.Error{File: configName(c), Problems: warnings})
				}
				return nil
			}
			log, err := newLogger(c)
			if err != nil {
				return configError(err)
			}
			if err := logProxyStart(log, c, cfg); err != nil {
				return configError(err)
			}
			for _, w := range warnings {
				log.Warn().Str("config", configName(c)).Int("line", w.Line).Int("col", w.Col).Str("key", w.Path).Msg(w.Msg)
			}
			if path := c.String("cpuprofile"); path != "" {
				stop, err := startCPUProfile(path)
				if err != nil {
					return err
				}
				defer stop()
			}
			return runProxy(c, proc, cfg, log)
		},
	}
}

// configName is the name the configuration's problems are reported under.
func configName(c *cli.Context) string {
	if path := c.String("config"); path != "" {
		return path
	}
	return "embedded default"
}

// runProxy starts the proxy of cfg (and with --demo the fake backend) and
// serves until a signal, or until an engine ends.
func runProxy(c *cli.Context, proc *lifecycle.Process, cfg *config.Config, log zerolog.Logger) error {
	inh, err := lifecycle.TakeInheritance()
	if err != nil {
		return startError(err)
	}
	var inherited []net.Listener
	if inh != nil {
		addrs := make([]string, len(cfg.Listeners))
		for i, l := range cfg.Listeners {
			addrs[i] = l.Listen
		}
		inherited = inh.ProxyListeners(addrs)
		log.Info().Int("listeners", len(inherited)).Msg("upgrade: started by a live upgrade, on the old process's listeners")
	}
	h := lifecycle.NewRegistry()
	var stops []func(context.Context) error
	var status []string // what listens, for the service manager
	// Whatever started is stopped when a later step fails.
	fail := func(err error) error { return stopAfter(err, lifecycle.StopAll(stops...)) }
	p, err := proxy.NewWithListeners(cfg, log, inherited)
	if err != nil {
		if inh != nil {
			inh.Close()
		}
		return configError(err)
	}
	if c.Bool("demo") {
		addr, gc := firstBackend(cfg)
		fw, _ := mcbackend.ParseForwarding(string(cfg.ForwardingOf(gc))) // a valid configuration's forwarding parses
		be, err := mcbackend.New(mcbackend.Config{Reactor: reactor.Config{
			Addrs: []string{addr}, Loops: 1, Logger: log.With().Str("component", "demo-backend").Logger(),
		}, Forwarding: fw, ForwardingSecret: []byte(gc.ForwardingSecret.Reveal())})
		if err != nil {
			return configError(fmt.Errorf("demo backend: %w", err))
		}
		if err := be.Start(); err != nil {
			return startError(fmt.Errorf("demo backend: %w (is something else listening there?)", err))
		}
		bound := addr
		if b := boundAddrs(be.Reactor()); len(b) == 1 {
			bound = b[0]
		}
		log.Info().Str("listen", bound).Str("forwarding", string(cfg.ForwardingOf(gc))).Msg("demo backend listening: offline login, echoes play packets")
		status = append(status, "demo backend on "+bound)
		stops = append(stops, be.Stop)
		h.AddServer("demo-backend", be.Reactor())
	}
	if err := p.Start(); err != nil {
		return fail(startError(err))
	}
	addrs := boundAddrs(p.Reactor())
	listening := make([]string, 0, len(cfg.Listeners))
	for i, l := range cfg.Listeners {
		ev := log.Info().Str("listen", l.Listen).Str("mode", string(l.Mode)).Int("index", i)
		bound := l.Listen
		if i < len(addrs) {
			ev = ev.Str("bound", addrs[i])
			bound = addrs[i]
		}
		ev.Msg("proxy listening")
		listening = append(listening, fmt.Sprintf("%s (%s)", bound, l.Mode))
	}
	status = append([]string{"proxy on " + strings.Join(listening, ", ")}, status...)
	stops = append([]func(context.Context) error{p.Stop}, stops...)
	h.AddProxy(p)
	policy := adminaccess.New(proxyAccess(cfg, c.Bool("pprof")), proxyKnobs)
	metricsAddr, metrics, err := startMetrics(c, log, h, inh.MetricsListener(), p.AdminHandler(), policy, proxymetrics.NewCollector(p))
	if err != nil {
		return fail(err)
	}
	path := c.String("config")
	up := &lifecycle.Upgrader{Log: log, Process: proc, Proxy: p, Metrics: metrics, HandoverStall: cfg.Shutdown.DrainTimeout}
	drain := &lifecycle.Drain{
		Timeout:  cfg.Shutdown.DrainTimeout,
		Shutdown: p.Shutdown,
		Open:     func() int64 { return p.Stats().Active },
		Reload:   func() error { return reloadProxy(log, p, policy, path) },
		Upgrade:  up.Upgrade,
	}
	h.SetReload(drain.Reload)
	if inh != nil {
		if err := inh.TakeOver(log, p); err != nil {
			log.Error().Err(err).Msg("upgrade: the old process keeps its sessions")
		}
	}
	return run(c, proc, lifecycle.RunOptions{Log: log, Health: h, Ready: lifecycle.ListeningStatus(metricsAddr, status...),
		Drain: drain, Stop: lifecycle.StopAll(append(stops, metrics.Shutdown)...)})
}

// logProxyStart writes the start line with the proxy's configuration: where
// it came from, its hash as the proxy uses it (config_hash, which
// tidegate_config_info and the reload lines show), the SHA-256 of the file
// (config_sha256, what sha256sum prints for it) and its limits.
func logProxyStart(log zerolog.Logger, c *cli.Context, cfg *config.Config) error {
	digest, err := configDigest(c.String("config"))
	if err != nil {
		return err
	}
	source := c.String("config")
	if source == "" {
		source = "embedded"
	}
	loops := cfg.Loops
	if loops == 0 {
		loops = runtime.NumCPU()
	}
	startEvent(log, c).Str("config", source).Str("config_hash", cfg.Hash()).Str("config_sha256", digest).Int("loops", loops).Int("gomaxprocs", lifecycle.SpareP(loops)).
		Int("max_sessions", cfg.Limits.MaxSessions).Int("max_sessions_per_ip", cfg.Limits.MaxSessionsPerIP).
		Int64("buffer_budget", cfg.Limits.BufferBudget).Dur("idle_timeout", cfg.Limits.IdleTimeout).
		Dur("drain_timeout", cfg.Shutdown.DrainTimeout).Bool("demo", c.Bool("demo")).Msg(startMessage)
	return nil
}

// firstBackend returns the address of the first backend of the default
// group (or of any group), where --demo starts its fake backend, and its
// group, whose forwarding the fake backend expects.
func firstBackend(cfg *config.Config) (string, config.GroupConfig) {
	if g, ok := cfg.Groups[cfg.DefaultGroup]; ok && len(g.Backends) > 0 {
		return g.Backends[0].Addr, g
	}
	for _, g := range cfg.Groups {
		if len(g.Backends) > 0 {
			return g.Backends[0].Addr, g
		}
	}
	return "127.0.0.1:25565", config.GroupConfig{}
}

// reloadProxy re-reads the configuration at path (the embedded default when
// empty), the admin token with it, and hands it to the running proxy and
// its metrics address's policy; every problem is returned and the running
// configuration (and policy) stays.
func reloadProxy(log zerolog.Logger, p *proxy.Proxy, policy *adminaccess.Policy, path string) error {
	from := path
	if from == "" {
		from = "the embedded default"
	}
	cfg, warnings, err := config.Load(path)
	if err == nil {
		err = p.Reload(cfg)
	}
	if err == nil {
		for _, w := range warnings {
			log.Warn().Str("config", from).Int("line", w.Line).Int("col", w.Col).Str("key", w.Path).Msg(w.Msg)
		}
	}
	if err != nil {
		p.CountFailedReload()
		return fmt.Errorf("reloading %s: %w", from, err)
	}
	policy.Set(proxyAccess(cfg, policy.Rules().Profiles))
	log.Info().Str("config", from).Str("config_hash", p.ConfigHash()).Msg("reloaded")
	return nil
}

// proxyKnobs say, in the refusals of the proxy's metrics address, which
// key allows what.
var proxyKnobs = adminaccess.Knobs{
	AllowRemote:  "set admin.allow_remote: true in the proxy's configuration",
	AllowedHosts: "list the name in admin.allowed_hosts in the proxy's configuration",
	Token:        "set admin.token_file in the proxy's configuration to a file (mode 0600) holding a token of at least 16 characters",
	Profiles:     profilesKnob,
}

// proxyAccess is the policy of the proxy's metrics address under cfg (its
// admin section and token), with profiles as --pprof says.
func proxyAccess(cfg *config.Config, profiles bool) adminaccess.Rules {
	return adminaccess.Rules{
		AllowRemote:  cfg.Admin.AllowRemote,
		AllowedHosts: cfg.Admin.AllowedHosts,
		Token:        adminaccess.Token(cfg.Admin.Token().Reveal()),
		Profiles:     profiles,
	}
}
