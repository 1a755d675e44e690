package config

import (
	"fmt"
	"maps"
	"slices"
)

// warnings returns what is valid but likely not meant, each with its path.
func (c *Config) warnings() []Problem {
	var ws []Problem
	warn := func(path, format string, args ...any) {
		ws = append(ws, Problem{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	for i, l := range c.Listeners {
		if l.Mode != ModeRaw && c.DefaultGroup == "" && len(c.Routes) == 0 {
			warn(fmt.Sprintf("listeners[%d]", i), "no routes and no default_group: every login is refused with %q; set default_group to the group hosts should go to",
				UnknownHostDisconnect)
		}
	}
	reached := c.RoutedGroups()
	for _, name := range slices.Sorted(maps.Keys(c.Groups)) {
		if _, ok := reached[name]; !ok {
			warn("groups."+name, "no listener sends sessions here: it is not default_group, a route's group or a raw listener's group")
			continue
		}
		weighted := false
		for _, b := range c.Groups[name].Backends {
			weighted = weighted || b.Weight > 0
		}
		if !weighted {
			warn("groups."+name+".backends", "every backend has weight 0, so this group takes no sessions")
		}
		if c.Groups[name].Strategy == StrategyLowestLatency && c.Probes.Interval == 0 {
			warn("groups."+name+".strategy", "lowest-latency needs the active checks' latency, and health.interval is 0: this group picks by weight at random")
		}
	}
	c.statusWarnings(warn)
	if c.Admin.AllowRemote && !c.Admin.Enabled {
		warn("admin.allow_remote", "covers only the profiles, the checks' details and POST /-/reload while admin.enabled is false: the admin API and status page are off")
	}
	c.clusterWarnings(warn)
	return ws
}
