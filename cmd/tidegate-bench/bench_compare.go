package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/internal/logflags"

	"github.com/tidegate/tidegate/benchmarks/session"
)

// benchCompareCommand prints two platform result files side by side.
func benchCompareCommand() *cli.Command {
	return &cli.Command{
		Name:      "compare",
		Usage:     "print two platform results (scripts/compare-platforms.sh) side by side with ratios",
		ArgsUsage: "A.json B.json",
		Flags:     logflags.Flags(),
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return fmt.Errorf("compare: want two files, A.json and B.json; got %d arguments", c.NArg())
			}
			a, err := session.ReadPlatform(c.Args().Get(0))
			if err != nil {
				return err
			}
			b, err := session.ReadPlatform(c.Args().Get(1))
			if err != nil {
				return err
			}
			return session.Compare(c.App.Writer, a, b, c.Args().Get(0), c.Args().Get(1))
		},
	}
}
