package proxy

import (
	"sort"
	"sync/atomic"
	"time"
)

// backend is one backend server and its passive health.
type backend struct {
	addr      string
	weight    int
	failures  atomic.Int32 // consecutive connect failures
	downUntil atomic.Int64 // unix nanoseconds; 0 when up
	active    atomic.Int64 // sessions relayed to it now
}

// group is a set of interchangeable backends chosen by weight.
type group struct {
	name     string
	backends []*backend
}

// router maps virtual hosts to groups.
type router struct {
	hosts  map[string]*group
	def    *group
	groups map[string]*group
	health HealthConfig
}

func newRouter(cfg *Config) *router {
	r := &router{hosts: map[string]*group{}, groups: map[string]*group{}, health: cfg.Health}
	names := make([]string, 0, len(cfg.Groups))
	for name := range cfg.Groups {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		g := &group{name: name}
		for _, b := range cfg.Groups[name].Backends {
			if b.Weight > 0 {
				g.backends = append(g.backends, &backend{addr: b.Addr, weight: b.Weight})
			}
		}
		r.groups[name] = g
	}
	for _, rt := range cfg.Routes {
		for _, h := range rt.Hosts {
			r.hosts[normalizeHostString(h)] = r.groups[rt.Group]
		}
	}
	if cfg.DefaultGroup != "" {
		r.def = r.groups[cfg.DefaultGroup]
	}
	return r
}

// route returns the group for a normalized host, the default group when no
// route names it, or nil.
func (r *router) route(host []byte) *group {
	if g, ok := r.hosts[string(host)]; ok {
		return g
	}
	return r.def
}

// pick chooses a backend by weight among those that are up; when all are
// down it chooses among all of them, since refusing every player helps nobody.
// rnd is the caller's (per-loop) random state.
func (g *group) pick(rnd *uint64, now int64) *backend {
	total := 0
	for _, b := range g.backends {
		if b.up(now) {
			total += b.weight
		}
	}
	up := total > 0
	if !up {
		for _, b := range g.backends {
			total += b.weight
		}
	}
	if total == 0 {
		return nil
	}
	n := int(xorshift(rnd) % uint64(total))
	for _, b := range g.backends {
		if up && !b.up(now) {
			continue
		}
		if n < b.weight {
			return b
		}
		n -= b.weight
	}
	return g.backends[len(g.backends)-1]
}

func (b *backend) up(now int64) bool {
	d := b.downUntil.Load()
	return d == 0 || now >= d
}

// connected records a successful connect.
func (b *backend) connected() {
	b.failures.Store(0)
	b.downUntil.Store(0)
}

// failed records a connect failure and reports whether it marked the backend down.
func (b *backend) failed(h HealthConfig) bool {
	if int(b.failures.Add(1)) < h.Failures {
		return false
	}
	b.failures.Store(0)
	b.downUntil.Store(time.Now().Add(h.Cooldown).UnixNano())
	return true
}

func xorshift(s *uint64) uint64 {
	x := *s
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	*s = x
	return x
}

func nowUnix() int64 { return time.Now().UnixNano() }
