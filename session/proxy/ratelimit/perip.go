package ratelimit

import (
	"maps"
	"sync"
)

// SessionsPerIP counts the sessions open per client IP, for
// limits.max_sessions_per_ip. The zero value is ready; it may be used from
// any goroutine.
type SessionsPerIP struct {
	mu sync.Mutex
	n  map[string]int
}

// Enter counts a session from ip if fewer than most are open; it reports
// whether it did.
func (c *SessionsPerIP) Enter(ip string, most int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[ip] >= most {
		return false
	}
	c.addLocked(ip)
	return true
}

// Add counts a session from ip whatever the limit: one admitted elsewhere.
func (c *SessionsPerIP) Add(ip string) {
	c.mu.Lock()
	c.addLocked(ip)
	c.mu.Unlock()
}

func (c *SessionsPerIP) addLocked(ip string) {
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[ip]++
}

// Leave stops counting one of ip's sessions.
func (c *SessionsPerIP) Leave(ip string) {
	c.mu.Lock()
	if n := c.n[ip] - 1; n > 0 {
		c.n[ip] = n
	} else {
		delete(c.n, ip)
	}
	c.mu.Unlock()
}

// Counts returns a copy of the counts, by IP; an IP with no session open
// is not among them.
func (c *SessionsPerIP) Counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := maps.Clone(c.n)
	if out == nil {
		out = map[string]int{}
	}
	return out
}
