// Command tidegate is an event-loop network server and proxy on gnet: a
// Minecraft-aware proxy, a TLV request/response server, a push server and
// a fake Minecraft backend. The load tools that measure them are in
// cmd/tidegate-bench, so that this binary links no benchmark code.
package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/internal/lifecycle"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	// First: a SIGHUP, SIGUSR2, SIGINT or SIGTERM while a server starts is
	// then handled once it serves, rather than ending the process.
	proc := lifecycle.Start()
	app := &cli.App{
		Name:  "tidegate",
		Usage: "event-loop proxy and servers on gnet",
		Description: "tidegate runs its connections as callbacks on gnet's event loops: no goroutine per\n" +
			"connection. Every command takes --log-level and --log-format, before or after its name.",
		Version: version,
		Flags:   logFlags(),
		Commands: []*cli.Command{
			proxyCommand(proc),
			serveCommand(proc),
			pushCommand(proc),
			backendCommand(proc),
			versionCommand(),
		},
	}
	if err := app.Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "tidegate:", err)
		os.Exit(exitRuntime)
	}
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the version",
		Flags: logFlags(),
		Action: func(c *cli.Context) error {
			fmt.Fprintf(c.App.Writer, "tidegate %s\n", version)
			return nil
		},
	}
}
