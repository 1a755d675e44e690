package main

import (
	"github.com/tidegate/tidegate/benchmarks/peers"
	"github.com/tidegate/tidegate/benchmarks/session"

	"github.com/urfave/cli/v2"
)

// haproxyBinFlag and nginxBinFlag name the peer proxies' programs for
// every command that starts them.
func haproxyBinFlag() cli.Flag {
	return &cli.StringFlag{Name: "haproxy-bin", Value: "haproxy", Usage: "HAProxy program"}
}

func nginxBinFlag() cli.Flag {
	return &cli.StringFlag{Name: "nginx-bin", Value: "nginx", Usage: "nginx program"}
}

// launchOptions reads the flags the commands that start proxies share
// (--proxy-cores, --goproxy-gomaxprocs where defined, --haproxy-bin,
// --nginx-bin) into the options that start kinds with the tidegate binary
// exe and a one-loop backend; the caller sets the rest.
func launchOptions(c *cli.Context, kinds []peers.Kind, exe string) session.LaunchOptions {
	return session.LaunchOptions{Kinds: kinds, ProxyCores: c.Int("proxy-cores"), GoMaxProcs: c.Int("goproxy-gomaxprocs"),
		BackendLoops: 1, Executable: exe, HAProxy: c.String("haproxy-bin"), Nginx: c.String("nginx-bin")}
}
