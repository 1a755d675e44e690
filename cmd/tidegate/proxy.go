package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/mcbackend"
	"github.com/tidegate/tidegate/session/proxy"

	"github.com/urfave/cli/v2"
)

func proxyCommand() *cli.Command {
	return &cli.Command{
		Name:  "proxy",
		Usage: "run the Minecraft-aware proxy (or a raw TCP relay)",
		Description: "Routes Minecraft Java connections by the virtual host in their handshake to a backend\n" +
			"group, then relays both directions on the event loop that owns the client. Listeners in\n" +
			"raw mode relay plain TCP to one group without parsing. Without --config the embedded\n" +
			"default is used (listen 0.0.0.0:25577, one backend 127.0.0.1:25565); print it with\n" +
			"--print-default-config.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Usage: "YAML configuration `FILE` (default: embedded)"},
			&cli.BoolFlag{Name: "validate-config", Usage: "check the configuration, report every problem with its path, and exit"},
			&cli.BoolFlag{Name: "print-default-config", Usage: "print the embedded default configuration and exit"},
			&cli.BoolFlag{Name: "demo", Usage: "also start a fake Minecraft backend in-process on the first backend address"},
			&cli.StringFlag{Name: "cpuprofile", Usage: "write a Go CPU profile to `FILE` until the proxy stops"},
			&cli.StringFlag{Name: "metrics-listen", Usage: "serve Prometheus /metrics, /healthz, /readyz and /debug/pprof/ on this `ADDR` (off when empty; keep it private)"},
		}, logFlags()...),
		Action: func(c *cli.Context) error {
			if c.Bool("print-default-config") {
				_, err := os.Stdout.Write(proxy.DefaultConfigYAML())
				return err
			}
			cfg, err := proxy.LoadConfig(c.String("config"))
			if c.Bool("validate-config") {
				if err != nil {
					return cli.Exit(fmt.Sprintf("configuration is invalid:\n%v", err), 2)
				}
				fmt.Fprintln(c.App.Writer, "configuration is valid")
				return nil
			}
			if err != nil {
				return err
			}
			log, err := newLogger(c)
			if err != nil {
				return err
			}
			if path := c.String("cpuprofile"); path != "" {
				stop, err := startCPUProfile(path)
				if err != nil {
					return err
				}
				defer stop()
			}
			var stops []func(context.Context) error
			if c.Bool("demo") {
				addr := firstBackend(cfg)
				be, err := mcbackend.New(mcbackend.Config{Reactor: reactor.Config{
					Addrs: []string{addr}, Loops: 1, Logger: log.With().Str("component", "demo-backend").Logger(),
				}})
				if err != nil {
					return fmt.Errorf("demo backend: %w", err)
				}
				if err := be.Start(); err != nil {
					return fmt.Errorf("demo backend on %s (is something else listening there?): %w", addr, err)
				}
				log.Info().Str("listen", addr).Msg("demo backend listening: offline login, echoes play packets")
				stops = append(stops, be.Stop)
			}
			p, err := proxy.New(cfg, log)
			if err != nil {
				return err
			}
			if err := p.Start(); err != nil {
				return err
			}
			for i, l := range cfg.Listeners {
				log.Info().Str("listen", l.Listen).Str("mode", string(l.Mode)).Int("index", i).Msg("proxy listening")
			}
			stops = append([]func(context.Context) error{p.Stop}, stops...)
			if addr := c.String("metrics-listen"); addr != "" {
				stop, err := serveMetrics(addr, proxy.NewCollector(p))
				if err != nil {
					return err
				}
				log.Info().Str("listen", addr).Msg("metrics listening: /metrics /healthz /readyz")
				stops = append(stops, stop)
			}
			return runUntilSignal(c.Context, func(ctx context.Context) error {
				var errs []error
				for _, stop := range stops {
					errs = append(errs, stop(ctx))
				}
				return errors.Join(errs...)
			})
		},
	}
}

// firstBackend returns the address of the first backend of the default
// group (or of any group), where --demo starts its fake backend.
func firstBackend(cfg *proxy.Config) string {
	if g, ok := cfg.Groups[cfg.DefaultGroup]; ok && len(g.Backends) > 0 {
		return g.Backends[0].Addr
	}
	for _, g := range cfg.Groups {
		if len(g.Backends) > 0 {
			return g.Backends[0].Addr
		}
	}
	return "127.0.0.1:25565"
}
