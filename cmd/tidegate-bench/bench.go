package main

import "github.com/urfave/cli/v2"

// benchSubcommands lists the load generators under `tidegate-bench bench`.
func benchSubcommands() []*cli.Command {
	return []*cli.Command{
		benchRPSCommand(),
		benchPushCommand(),
		benchSessionCommand(),
		benchIdleCommand(),
		benchIdleWorkerCommand(),
		benchHandshakeCommand(),
		benchClusterCommand(),
		benchStormCommand(),
		benchAcceptCommand(),
		benchBudgetCommand(),
		benchDrainCommand(),
		benchPausedCommand(),
		benchUpgradeCommand(),
		benchSoakCommand(),
		benchCompareCommand(),
	}
}
