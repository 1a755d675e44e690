package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/benchmarks/clusterload"
	"github.com/tidegate/tidegate/internal/logflags"
)

// benchClusterCommand is a login storm with the cluster (Redis) on and off.
func benchClusterCommand() *cli.Command {
	return &cli.Command{
		Name:  "cluster",
		Usage: "logins per second, proxy CPU per login and Redis round trips per login, with cluster: on and off",
		Description: "Starts redis-server, the fake backend and, per trial, a tidegate proxy with cluster.redis set or\n" +
			"not (alternating which goes first), and storms it with --count logins (Handshake, Login Start,\n" +
			"Login Success, close). Prints each trial and median [min–max] per mode over the trials without\n" +
			"a failed login.",
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "count", Value: 2000, Usage: "logins per trial"},
			&cli.IntFlag{Name: "parallel", Value: 16, Usage: "logins in progress at once"},
			&cli.IntFlag{Name: "repeats", Value: 3, Usage: "on/off pairs"},
			&cli.IntFlag{Name: "proxy-cores", Value: 1, Usage: "the proxy's loops"},
			sourcesFlag(),
			&cli.StringFlag{Name: "redis-bin", Value: "redis-server", Usage: "the redis-server `PROGRAM`"},
			&cli.BoolFlag{Name: "json", Usage: "print the result as JSON"},
			tidegateBinFlag(),
		}, logflags.Flags()...),
		Action: func(c *cli.Context) error {
			log, sources, err := stormSetup(c)
			if err != nil {
				return err
			}
			exe, err := tidegateBinary(c)
			if err != nil {
				return err
			}
			ctx, stop := sessionContext(c)
			defer stop()
			res, err := clusterload.Run(ctx, clusterload.Config{Tidegate: exe, Redis: c.String("redis-bin"), Count: c.Int("count"),
				Parallel: c.Int("parallel"), Repeats: c.Int("repeats"), ProxyCores: c.Int("proxy-cores"), Sources: sources,
				Log: func(f string, a ...any) { log.Info().Msg(fmt.Sprintf(f, a...)) }})
			if res == nil {
				return err
			}
			if c.Bool("json") {
				if e := writeJSON(c, res); e != nil {
					return e
				}
			} else {
				if e := clusterload.WriteTable(os.Stdout, res); e != nil {
					return e
				}
			}
			if err != nil {
				return err
			}
			for _, t := range res.Trials {
				if t.Failed > 0 {
					return cli.Exit("cluster bench: a trial had failed logins", 1)
				}
			}
			return nil
		},
	}
}
