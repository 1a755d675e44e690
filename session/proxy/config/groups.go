package config

// RoutedGroups returns the groups some listener sends sessions to, each
// with the kind of active check that health.check: auto gives it:
// ProbeStatus for a group a minecraft listener routes to (default_group
// and the routes' groups), ProbeTCP for one only raw listeners send to.
func (c *Config) RoutedGroups() map[string]ProbeKind {
	out := map[string]ProbeKind{}
	minecraft := false
	for _, l := range c.Listeners {
		if l.Mode != ModeRaw {
			minecraft = true
		} else if _, ok := out[l.Group]; !ok {
			out[l.Group] = ProbeTCP
		}
	}
	if minecraft {
		if c.DefaultGroup != "" {
			out[c.DefaultGroup] = ProbeStatus
		}
		for _, r := range c.Routes {
			out[r.Group] = ProbeStatus
		}
	}
	return out
}

// ProbeKindOf returns the kind of active check group name gets, of
// routed (RoutedGroups): health.check when it is not auto, else the one
// routed gives it, and ProbeTCP for a group no listener routes to; routed
// tells whether one does.
func (c *Config) ProbeKindOf(routed map[string]ProbeKind, name string) (kind ProbeKind, isRouted bool) {
	kind, isRouted = routed[name]
	switch {
	case c.Probes.Kind != ProbeAuto:
		kind = c.Probes.Kind
	case !isRouted:
		kind = ProbeTCP
	}
	return kind, isRouted
}

// OfflineMessage is the text of the login disconnect of group gc while it
// has no backend up: its offline_message, else health.offline_message.
func (c *Config) OfflineMessage(gc GroupConfig) string {
	if gc.OfflineMessage != "" {
		return gc.OfflineMessage
	}
	return c.Probes.OfflineMessage
}

// OfflineMOTD is the description of the status answer of group gc while it
// has no backend up: its offline_message, else status.offline.motd, else
// health.offline_message.
func (c *Config) OfflineMOTD(gc GroupConfig) string {
	if gc.OfflineMessage == "" && c.Status.Offline.MOTD != "" {
		return c.Status.Offline.MOTD
	}
	return c.OfflineMessage(gc)
}
