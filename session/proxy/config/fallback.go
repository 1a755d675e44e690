package config

import "fmt"

// checkFallback reports the problems of group g's fallback list under
// path p: each entry names another group, once, whose logins the proxy
// completes as g's are (a move logs the player in again).
func (c *Config) checkFallback(bad func(path, format string, args ...any), p, name string, g GroupConfig) {
	if len(g.Fallback) == 0 {
		return
	}
	if g.LoginMode() == LoginTransparent {
		bad(p+".fallback", "moving players needs the proxy to complete the login: set login: offline or online")
	}
	seen := map[string]bool{}
	for i, f := range g.Fallback {
		fp := fmt.Sprintf("%s.fallback[%d]", p, i)
		target, ok := c.Groups[f]
		switch {
		case f == name:
			bad(fp, "%q is this group: a fallback is another group", f)
		case !ok:
			bad(fp, "no group %q", f)
		case seen[f]:
			bad(fp, "%q is listed twice", f)
		case target.LoginMode() == LoginTransparent:
			bad(fp, "group %q relays its logins untouched (login: transparent): a player can only be moved to a group whose logins the proxy completes", f)
		}
		seen[f] = true
	}
}
