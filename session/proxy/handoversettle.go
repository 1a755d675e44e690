package proxy

import (
	"os"
	"sync/atomic"

	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/proxy/handover"
)

// What becomes of a session a hand-over sent, as package handover
// settles it: the new process has it, or this process takes it back.

// settle does what v says with h.
func (p *Proxy) settle(h handed, v handover.Verdict, takenBack *atomic.Int64) {
	switch v {
	case handover.Adopted:
		p.letGo(h)
	case handover.TakeBack:
		if p.takeBack(h) {
			takenBack.Add(1)
		}
	}
}

// letGo lets this process's copies of a session the new process has go:
// its ticket leaves this process's registry (the new process answers for
// it) and is remembered for HandOverLost.
func (p *Proxy) letGo(h handed) {
	if h.ticket != nil {
		p.cluster.HandedOff(h.ticket)
		p.sentMu.Lock()
		p.sentTickets = append(p.sentTickets, h.ticket)
		p.sentMu.Unlock()
	}
	h.client.Close()
	h.backend.Close()
	reactor.HoldFDs(-fdsPerHandedSession)
}

// takeBack adopts a session the new process does not have here again, as
// the new process would have (adopt closes the files); it stays here for
// the rest of this hand-over. A session that cannot be taken back (its
// peer reset it meanwhile) leaves the network's state too.
func (p *Proxy) takeBack(h handed) bool {
	err := p.adopt(h.state, []*os.File{h.client, h.backend}, nil, true)
	reactor.HoldFDs(-fdsPerHandedSession)
	if err != nil {
		if h.ticket != nil {
			p.cluster.Release(h.ticket)
		}
		p.log.Warn().Err(err).Msg("hand-over: a session the new process does not have could not be taken back either; it is lost")
		return false
	}
	p.handedOver.Add(-1)
	return true
}
