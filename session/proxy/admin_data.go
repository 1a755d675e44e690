package proxy

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/proxy/admin"
	"github.com/tidegate/tidegate/session/proxy/config"
)

// What the admin API reads of the sessions and refusals lives on the event
// loops, unlocked: a request runs a function on every loop (Loop.Execute)
// that copies what it needs, and waits for the answers with a timeout. The
// data path takes no lock and does no more work for it than a ring write
// per refusal.

// recentPerLoop is how many refusals each loop remembers.
const recentPerLoop = 64

// rejection is one refusal, as a loop remembers it.
type rejection struct {
	at                int64 // unix nanoseconds
	remote            netip.AddrPort
	reason            reason
	host, user, group string
}

// rejectionRing holds a loop's last recentPerLoop refusals. It is written
// and read only on its loop.
type rejectionRing struct {
	buf [recentPerLoop]rejection
	n   uint64 // refusals written so far
}

func (r *rejectionRing) add(x rejection) {
	r.buf[r.n%recentPerLoop] = x
	r.n++
}

// appendTo appends the refusals the ring holds, oldest first.
func (r *rejectionRing) appendTo(out []rejection) []rejection {
	start := uint64(0)
	if r.n > recentPerLoop {
		start = r.n - recentPerLoop
	}
	for i := start; i < r.n; i++ {
		out = append(out, r.buf[i%recentPerLoop])
	}
	return out
}

// refused counts a refusal by r on the loop of ls and, unless it is a
// legacy ping (answered, not refused), remembers it for the admin API.
func (ls *loopState) refused(r reason, remote netip.AddrPort, host, user, group string) {
	ls.counters.rejected[r].Add(1)
	if r != reasonLegacyPing {
		ls.recent.add(rejection{at: time.Now().UnixNano(), remote: remote, reason: r, host: host, user: user, group: group})
	}
}

// refused counts and remembers a refusal of s by r.
func (s *session) refused(r reason) {
	group := ""
	if s.group != nil {
		group = s.group.name
	}
	s.p.loopOf(s.client).refused(r, s.remoteAddrPort(), s.host, s.username, group)
}

// remoteAddrPort is the client's address: the PROXY header's, if any.
func (s *session) remoteAddrPort() netip.AddrPort {
	if s.pp != nil {
		return s.pp.src
	}
	return addrPortOf(s.client.RemoteAddr())
}

// onLoops runs f on every loop of p (with the loop's state) and returns
// the answers that came before ctx ended, and how many loops did not
// answer. f runs on the loop: it must copy what it returns and not block.
// A loop that answers late sends into a buffered channel, so nothing waits
// for it.
func onLoops[T any](ctx context.Context, p *Proxy, f func(*reactor.Loop, *loopState) T) ([]T, int) {
	loops := p.rs.Loops()
	ch := make(chan T, len(loops))
	asked := 0
	for _, l := range loops {
		ls := &p.loops[l.Index()%len(p.loops)]
		if l.Execute(func() { ch <- f(l, ls) }) == nil {
			asked++
		}
	}
	out := make([]T, 0, asked)
	for range asked {
		select {
		case v := <-ch:
			out = append(out, v)
		case <-ctx.Done():
			return out, len(loops) - len(out)
		}
	}
	return out, len(loops) - len(out)
}

// RecentRejections returns, newest first, at most limit of the last
// refusals (each loop remembers its last 64; legacy pings, which are
// answered, are not among them), and how many loops did not answer before
// ctx ended (their refusals are missing). It may be called from any
// goroutine.
func (p *Proxy) RecentRejections(ctx context.Context, limit int) ([]admin.Rejection, int) {
	got, missing := onLoops(ctx, p, func(_ *reactor.Loop, ls *loopState) []rejection {
		return ls.recent.appendTo(nil)
	})
	var all []rejection
	for _, rs := range got {
		all = append(all, rs...)
	}
	slices.SortStableFunc(all, func(a, b rejection) int { return cmp.Compare(b.at, a.at) })
	all = all[:min(len(all), max(limit, 0))]
	out := make([]admin.Rejection, len(all))
	for i, r := range all {
		out[i] = admin.Rejection{At: time.Unix(0, r.at), Remote: addrString(r.remote), Reason: r.reason.String(), Host: r.host, User: r.user, Group: r.group}
	}
	return out, missing
}

// addrString is a's text; "" when it is not valid.
func addrString(a netip.AddrPort) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}

var stateNames = map[state]string{
	stHandshake: "handshake", stLoginStart: "login", stLocalStatus: "status", stLegacyPing: "legacy_ping",
	stConnecting: "connecting", stRelay: "relay", stDone: "closing", stAdopting: "adopting",
	stHandedOver: "handed_over", stProxyHeader: "proxy_header",
}

func (st state) String() string {
	if n, ok := stateNames[st]; ok {
		return n
	}
	return fmt.Sprintf("state(%d)", uint8(st))
}

// sessionRow is a session as a loop copies it: no formatting or
// allocation per session on the loop.
type sessionRow struct {
	remote         netip.AddrPort
	listener       *config.ListenerConfig
	host, user     string
	group, backend string
	protocol       int32
	state          state
	opened         int64
}

// loopSessions is one loop's answer to Sessions.
type loopSessions struct {
	open, matched int
	rows          []sessionRow // at most the limit
	byHost        map[string]int
	byBackend     map[[2]string]int
	byState       map[state]int
}

// Sessions counts the open sessions, those that pass f per host, backend
// and state, and lists at most f.Limit of them (at most
// MaxSessionsListed). It runs a scan on each event loop, which visits its
// sessions once, and waits for them until ctx ends: a loop that has not
// answered by then is counted in LoopsUnanswered. It may be called from
// any goroutine.
func (p *Proxy) Sessions(ctx context.Context, f admin.SessionFilter) admin.SessionsSummary {
	f = f.Normalized()
	f.Limit = min(max(f.Limit, 0), admin.MaxSessionsListed)
	got, missing := onLoops(ctx, p, func(l *reactor.Loop, _ *loopState) loopSessions {
		return scanSessions(l, &f)
	})
	sum := admin.SessionsSummary{ByHost: []admin.HostCount{}, ByBackend: []admin.BackendCount{}, ByState: map[string]int{}, Sessions: []admin.SessionInfo{}, LoopsUnanswered: missing}
	hosts := map[string]int{}
	backends := map[[2]string]int{}
	var rows []sessionRow
	for _, ls := range got {
		sum.Open += ls.open
		sum.Matched += ls.matched
		for h, n := range ls.byHost {
			hosts[h] += n
		}
		for b, n := range ls.byBackend {
			backends[b] += n
		}
		for st, n := range ls.byState {
			sum.ByState[st.String()] += n
		}
		rows = append(rows, ls.rows...)
	}
	for h, n := range hosts {
		sum.ByHost = append(sum.ByHost, admin.HostCount{Host: h, Sessions: n})
	}
	slices.SortFunc(sum.ByHost, func(a, b admin.HostCount) int {
		return cmp.Or(cmp.Compare(b.Sessions, a.Sessions), cmp.Compare(a.Host, b.Host))
	})
	for b, n := range backends {
		sum.ByBackend = append(sum.ByBackend, admin.BackendCount{Group: b[0], Backend: b[1], Sessions: n})
	}
	slices.SortFunc(sum.ByBackend, func(a, b admin.BackendCount) int {
		return cmp.Or(cmp.Compare(b.Sessions, a.Sessions), cmp.Compare(a.Group, b.Group), cmp.Compare(a.Backend, b.Backend))
	})
	slices.SortFunc(rows, func(a, b sessionRow) int {
		return cmp.Or(cmp.Compare(a.opened, b.opened), a.remote.Compare(b.remote))
	})
	sum.Truncated = sum.Matched > f.Limit
	for _, r := range rows[:min(len(rows), f.Limit)] {
		info := admin.SessionInfo{Remote: addrString(r.remote), Host: r.host, User: r.user, Protocol: r.protocol,
			Group: r.group, Backend: r.backend, State: r.state.String()}
		if r.listener != nil {
			info.Listener, info.Mode = r.listener.Listen, r.listener.Mode
		}
		if r.opened != 0 {
			info.Since = time.Unix(0, r.opened)
		}
		sum.Sessions = append(sum.Sessions, info)
	}
	return sum
}

// scanSessions, on l, counts and copies the sessions that pass f.
func scanSessions(l *reactor.Loop, f *admin.SessionFilter) loopSessions {
	out := loopSessions{byHost: map[string]int{}, byBackend: map[[2]string]int{}, byState: map[state]int{}}
	l.EachConn(func(c *reactor.Conn) {
		s, ok := c.Value.(*session)
		if !ok || s.client != c {
			return
		}
		out.open++
		var group, backend string
		if s.group != nil {
			group = s.group.name
		}
		if s.target != nil {
			backend = s.target.addr
		}
		if !f.Matches(s.host, s.username, group, backend) {
			return
		}
		out.matched++
		out.byHost[s.host]++
		if backend != "" {
			out.byBackend[[2]string{group, backend}]++
		}
		out.byState[s.state]++
		if len(out.rows) < f.Limit {
			out.rows = append(out.rows, sessionRow{remote: s.remoteAddrPort(), listener: s.listenerCfg(), host: s.host, user: s.username,
				group: group, backend: backend, protocol: s.protocol, state: s.state, opened: s.opened})
		}
	})
	return out
}
