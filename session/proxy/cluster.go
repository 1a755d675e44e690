package proxy

import (
	"context"
	"time"

	"github.com/tidegate/tidegate/session/cluster"
	"github.com/tidegate/tidegate/session/proxy/network"
	"github.com/tidegate/tidegate/session/proxy/reasons"
	"github.com/tidegate/tidegate/session/proxy/status"
)

// Several proxies, one network: the sessions' side of it (session/cluster
// does the Redis side, session/proxy/network describes how a login waits
// for the network's verdict).

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

// clusterLogin asks the network about a login whose Login Start (body) was
// read: the session waits, not read, for the verdict, and goes on in
// clusterVerdict.
func (s *session) clusterLogin(body []byte) {
	sess, lim := network.Login(s.gen.cfg, s.username, s.host, s.group.name, body, s.protocol, s.ip)
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
	l.Schedule(&s.timer, network.LoginWait(&s.gen.cfg.Cluster, time.Duration(s.handshakeDeadline()-l.Now())))
}

// clusterVerdict goes on with a login the network answered.
func (s *session) clusterVerdict(a cluster.Answer) {
	if r, refused := network.Refusal(a.Verdict); refused {
		s.ticket = nil
		s.reject(r, nil)
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
		_ = c.Write(network.KickedDisconnect())
	}
	s.p.log.Info().Str("remote", s.remoteAddr()).Str("user", s.username).Msg("session closed: the player logged in again elsewhere")
	c.Discard(-1)
	s.closeBoth()
}

// networkPlayers returns the network's players for status answers under
// gen (network.StatusPlayers), nil without them.
func (p *Proxy) networkPlayers(gen *generation) *status.Players {
	return network.StatusPlayers(p.cluster, gen.cfg.Cluster)
}
