package proxy

import (
	"context"
	"fmt"
	"time"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/cluster"
	"github.com/tidegate/tidegate/session/proxy/config"
	"github.com/tidegate/tidegate/session/proxy/network"
	"github.com/tidegate/tidegate/session/proxy/reasons"
	"github.com/tidegate/tidegate/session/proxy/status"
)

// Several proxies, one network (session/cluster does the Redis side). With
// cluster.redis set, each proxy publishes its logged-in sessions and a
// heartbeat in Redis, and a login waits, paused on its loop, for the
// network's verdict before its backend is dialled: a second login of a name
// or UUID held anywhere is refused (or, with duplicate_login: kick_old, the
// older session is closed, on whichever proxy it is), and with
// network_limits the login rate per address and the session cap per subnet
// hold across proxies. The Redis calls run on the cluster client's few
// goroutines; the verdict comes back to the session's loop through
// Loop.Execute. When Redis does not answer within login_wait (or the
// client's circuit breaker is open) the login goes on by this proxy's own
// state: its local limits and the duplicates among its own sessions.

// newClusterClient builds the cluster client of cfg, or nil when it is off.
func (p *Proxy) newClusterClient(cfg *config.Config) (*cluster.Client, error) {
	if cfg.Cluster.Redis == "" {
		return nil, nil
	}
	c, err := cluster.New(network.ClientConfig(cfg.Cluster, p.log, p.onKick))
	if err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	return c, nil
}

// stopCluster stops the cluster client, if any.
func (p *Proxy) stopCluster(ctx context.Context) error {
	if p.cluster == nil {
		return nil
	}
	return p.cluster.Stop(ctx)
}

// Cluster returns the proxy's cluster client, nil when cluster.redis is off.
func (p *Proxy) Cluster() *cluster.Client { return p.cluster }

// onKick closes, on its loop, a session a newer login elsewhere displaced.
func (p *Proxy) onKick(h any) {
	if s, ok := h.(*session); ok {
		_ = s.client.Loop().Execute(s.kicked)
	}
}

// clusterWaitSlack is how much longer than cluster.login_wait a login
// waits for the cluster client's answer (which comes within login_wait)
// before going on without it.
const clusterWaitSlack = 250 * time.Millisecond

// clusterLogin asks the network about a login whose Login Start (body) was
// read: the session waits, not read, for the verdict, and goes on in
// clusterVerdict.
func (s *session) clusterLogin(body []byte) {
	cc := &s.gen.cfg.Cluster
	sess := cluster.Session{Name: s.username, Host: s.host, Backend: s.group.name, Since: time.Now()}
	if u, ok := mc.LoginStartUUID(body, s.protocol); ok {
		sess.UUID = string(mc.AppendUUID(nil, u, false))
	}
	var lim cluster.Limits
	if cc.NetworkLimits {
		lim, sess.Subnet = network.Limits(&s.gen.cfg.Limits, s.ip)
	}
	c := s.client
	l := c.Loop()
	s.pre.clusterSeq++
	seq := s.pre.clusterSeq
	t, a, wait := s.p.cluster.Login(sess, lim, s, func(a cluster.Answer) {
		_ = l.Execute(func() {
			// The state first: a session no longer waiting may be relaying, without pre.
			if s.state == stClusterWait && s.pre.clusterSeq == seq {
				s.clusterVerdict(a)
			}
		})
	})
	s.ticket = t
	if !wait {
		s.clusterVerdict(a)
		return
	}
	s.state = stClusterWait
	c.PauseRead()
	d := cc.LoginWait + clusterWaitSlack
	if left := time.Duration(s.handshakeDeadline() - l.Now()); left < d {
		d = left
	}
	l.Schedule(&s.timer, d)
}

// clusterVerdict goes on with a login the network answered.
func (s *session) clusterVerdict(a cluster.Answer) {
	switch a.Verdict {
	case cluster.Duplicate:
		s.ticket = nil
		s.reject(reasons.DuplicateLogin, nil)
		return
	case cluster.LoginRate:
		s.ticket = nil
		s.reject(reasons.LoginRate, nil)
		return
	case cluster.SubnetCap:
		s.ticket = nil
		s.reject(reasons.MaxSessionsPerSubnet, nil)
		return
	}
	if s.state == stClusterWait {
		c := s.client
		c.ResumeRead()
		c.Loop().ScheduleAt(&s.timer, s.handshakeDeadline())
	}
	s.connect()
}

// clusterWaitOver runs when a login waited for the network's verdict past
// login_wait: it goes on by the local state (or times out).
func (s *session) clusterWaitOver() {
	if s.client.Loop().Now() >= s.handshakeDeadline() {
		s.reject(reasons.HandshakeTimeout, nil)
		return
	}
	s.pre.clusterSeq++ // a late answer is ignored
	s.p.log.Debug().Str("remote", s.remoteAddr()).Str("user", s.username).Msg("cluster: no verdict in time; the login goes on by local state")
	s.clusterVerdict(cluster.Answer{Verdict: cluster.Local})
}

// releaseTicket takes the session out of the network's state.
func (s *session) releaseTicket() {
	if s.ticket != nil {
		s.p.cluster.Release(s.ticket)
		s.ticket = nil
	}
}

// kicked closes a session a newer login of its name or UUID displaced: a
// player still logging in reads why.
func (s *session) kicked() {
	c := s.client
	switch s.state {
	case stDone, stHandedOver, stAdopting:
		return
	}
	if c.Closing() {
		return
	}
	if s.state == stRelay {
		s.p.loopOf(c).counters.ended[reasons.LoggedInElsewhere].Add(1)
	} else {
		s.p.loopOf(c).counters.rejected[reasons.LoggedInElsewhere].Add(1)
		_ = c.Write(mc.AppendLoginDisconnect(nil, []byte(`{"text":"`+reasons.DisconnectText(reasons.LoggedInElsewhere)+`"}`)))
	}
	s.p.log.Info().Str("remote", s.remoteAddr()).Str("user", s.username).Msg("session closed: the player logged in again elsewhere")
	c.Discard(-1)
	s.closeBoth()
}

// networkPlayers returns the network's players for status answers under
// gen, when cluster.status_online or status_sample ask for them and Redis
// answers; nil otherwise (the backend's players then stand).
func (p *Proxy) networkPlayers(gen *generation) *status.Players {
	cc := gen.cfg.Cluster
	if p.cluster == nil || (!cc.StatusOnline && cc.StatusSample == 0) {
		return nil
	}
	n, ok := p.cluster.Network()
	if !ok {
		return nil
	}
	return network.Players(cc, n)
}
