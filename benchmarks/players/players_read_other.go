//go:build !linux

package players

import "sync"

// goroutineReaders read every session's replies on a goroutine of its
// own, blocking in Go's netpoller: the reader outside Linux.
type goroutineReaders struct {
	ph *playersPhase
	wg sync.WaitGroup
}

// latencyShards is the number of latency histograms the readers share
// (one per session would take 5,000 × ~200 KiB).
const latencyShards = 16

// startReaders starts reading every session's replies.
func (ph *playersPhase) startReaders() (replyReaders, error) {
	r := &goroutineReaders{ph: ph}
	ph.shards = make([]*latencyShard, latencyShards)
	for i := range ph.shards {
		ph.shards[i] = newLatencyShard(true)
	}
	for _, pl := range ph.players {
		lat := ph.shards[pl.id%latencyShards]
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			rb, start := newReplyBuffer(pl.leftover, lat)
			pl.leftover = nil
			if !ph.consume(pl, rb, start, ph.now()) {
				return
			}
			for {
				sp := ph.space(rb)
				m, err := pl.nc.Read(sp)
				if m > 0 && pl.dec != nil {
					pl.dec.XORKeyStream(sp[:m], sp[:m])
				}
				if m > 0 && !ph.consume(pl, rb, m, ph.now()) {
					return
				}
				if err != nil && m == 0 {
					ph.readFailed(pl, err)
					return
				}
			}
		}()
	}
	return r, nil
}

// stop closes the connections, which ends the readers, and waits for them.
func (r *goroutineReaders) stop() {
	r.ph.closeAll()
	r.wg.Wait()
}
