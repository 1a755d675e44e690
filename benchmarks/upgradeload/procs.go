package upgradeload

import "github.com/tidegate/tidegate/internal/procs"

// alive reports whether pid is running (see procs.Alive).
func alive(pid int) bool { return procs.Alive(pid) }

// strays returns the live processes other than this one whose command line
// holds marker (the trial's configuration path): proxies that a failed
// upgrade left behind. It finds nothing outside Linux.
func strays(marker string) []int { return procs.WithMarker(marker) }
