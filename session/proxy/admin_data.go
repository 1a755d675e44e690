package proxy

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/proxy/admin"
	"github.com/tidegate/tidegate/session/proxy/config"
	"github.com/tidegate/tidegate/session/proxy/reasons"
)

// What the admin API reads of the sessions and refusals lives on the event
// loops, unlocked: a request runs a function on every loop (Loop.Execute)
// that copies what it needs, and waits for the answers with a timeout. The
// data path takes no lock and does no more work for it than a ring write
// per refusal (package admin merges the answers).

// refused counts a refusal by r on the loop of ls and, unless it is a
// legacy ping (answered, not refused), remembers it for the admin API.
func (ls *loopState) refused(r reasons.Reason, remote netip.AddrPort, host, user, group string) {
	ls.counters.rejected[r].Add(1)
	if r != reasons.LegacyPing {
		ls.recent.Add(admin.Refusal{At: time.Now().UnixNano(), Remote: remote, Reason: r.String(), Host: host, User: user, Group: group})
	}
}

// refused counts and remembers a refusal of s by r.
func (s *session) refused(r reasons.Reason) {
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
	return config.AddrPortOf(s.client.RemoteAddr())
}

// onLoops runs f on every loop of p (with the loop's state) and returns
// the answers that came before ctx ended, and how many loops did not
// answer (admin.Gather). f runs on the loop: it must copy what it returns
// and not block.
func onLoops[T any](ctx context.Context, p *Proxy, f func(*reactor.Loop, *loopState) T) ([]T, int) {
	loops := p.rs.Loops()
	return admin.Gather(ctx, len(loops), func(i int, answer func(T)) bool {
		l := loops[i]
		ls := &p.loops[l.Index()%len(p.loops)]
		return l.Execute(func() { answer(f(l, ls)) }) == nil
	})
}

// RecentRejections returns, newest first, at most limit of the last
// refusals (each loop remembers its last admin.RecentPerLoop; legacy
// pings, which are answered, are not among them), and how many loops did
// not answer before ctx ended (their refusals are missing). It may be
// called from any goroutine.
func (p *Proxy) RecentRejections(ctx context.Context, limit int) ([]admin.Rejection, int) {
	got, missing := onLoops(ctx, p, func(_ *reactor.Loop, ls *loopState) []admin.Refusal {
		return ls.recent.AppendTo(nil)
	})
	return admin.NewestRejections(got, limit), missing
}

var stateNames = map[state]string{
	stHandshake: "handshake", stLoginStart: "login", stLocalStatus: "status", stLegacyPing: "legacy_ping",
	stConnecting: "connecting", stRelay: "relay", stDone: "closing", stAdopting: "adopting",
	stHandedOver: "handed_over", stProxyHeader: "proxy_header", stEncryption: "encryption", stAuthWait: "authenticating",
	stMoving: "moving",
}

func (st state) String() string {
	if n, ok := stateNames[st]; ok {
		return n
	}
	return fmt.Sprintf("state(%d)", uint8(st))
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
	got, missing := onLoops(ctx, p, func(l *reactor.Loop, _ *loopState) admin.LoopSessions {
		return scanSessions(l, &f)
	})
	return admin.Summarize(got, missing, f.Limit)
}

// scanSessions, on l, counts its sessions and copies those that pass f
// (admin.LoopSessions.Add).
func scanSessions(l *reactor.Loop, f *admin.SessionFilter) admin.LoopSessions {
	out := admin.NewLoopSessions()
	l.EachConn(func(c *reactor.Conn) {
		s, ok := c.Value.(*session)
		if !ok || s.client != c {
			return
		}
		var group, backend string
		if s.group != nil {
			group = s.group.name
		}
		if s.target != nil {
			backend = s.target.addr
		}
		out.Add(f, admin.SessionRow{Remote: s.remoteAddrPort(), Listener: s.listenerCfg(), Host: s.host, User: s.username,
			Group: group, Backend: backend, Protocol: s.protocol, State: s.state.String(), Opened: s.opened})
	})
	return out
}
