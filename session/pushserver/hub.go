package pushserver

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/tidegate/tidegate/reactor"
)

// hub is the topic registry. A topic is in it while some loop has
// subscribers to it: the first subscription creates it and the last one to
// leave removes it (see release).
type hub struct {
	mu        sync.RWMutex
	topics    map[string]*topic
	maxTopics int
}

// topic is one topic and the subscriber loops that have subscribers to it.
type topic struct {
	name []byte

	mu      sync.Mutex                    // serializes changes of loops and removed
	loops   atomic.Pointer[[]*localTopic] // copy on write
	removed bool                          // withdrawn from the registry: joins look it up again
}

// localTopic is one topic's subscribers on one subscriber loop; only that
// loop touches it.
type localTopic struct {
	t     *topic
	sl    *subLoop
	subs  []*subscriber
	dirty bool // queued in sl.dirty for an immediate flush
}

// subLoop is the push server's state for one subscriber loop; only that loop
// touches it, except counters.
type subLoop struct {
	hub    *hub
	loop   *reactor.Loop
	topics map[*topic]*localTopic
	dirty  []*localTopic
	phases int64 // subscribers given a window phase so far (subscriber.phase)
	counters
}

func newHub(maxTopics int) *hub {
	return &hub{topics: make(map[string]*topic), maxTopics: maxTopics}
}

// lookup returns the topic named name, or nil.
func (h *hub) lookup(name []byte) *topic {
	h.mu.RLock()
	t := h.topics[string(name)]
	h.mu.RUnlock()
	return t
}

// topicFor returns the topic named name, creating it if the registry has room.
func (h *hub) topicFor(name []byte) (*topic, error) {
	if t := h.lookup(name); t != nil {
		return t, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if t := h.topics[string(name)]; t != nil {
		return t, nil
	}
	if len(h.topics) >= h.maxTopics {
		return nil, fmt.Errorf("push: topic %q: registry is full at %d topics", name, h.maxTopics)
	}
	t := &topic{name: slices.Clone(name)}
	t.loops.Store(&[]*localTopic{})
	h.topics[string(t.name)] = t
	return t, nil
}

// len returns the number of topics in the registry.
func (h *hub) len() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.topics)
}

// release removes t from the registry if no loop has subscribers to it.
// Lock order: h.mu, then t.mu; addLoop takes only t.mu and refuses a
// removed topic, so a subscription racing with the removal looks the topic
// up again instead of joining one that publishers no longer find.
func (h *hub) release(t *topic) {
	h.mu.Lock()
	t.mu.Lock()
	if len(*t.loops.Load()) == 0 && !t.removed {
		t.removed = true
		if h.topics[string(t.name)] == t {
			delete(h.topics, string(t.name))
		}
	}
	t.mu.Unlock()
	h.mu.Unlock()
}

// addLoop publishes lt as one of t's loops; it reports false, and does
// nothing, when t has been removed from the registry.
func (t *topic) addLoop(lt *localTopic) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.removed {
		return false
	}
	cur := *t.loops.Load()
	next := append(slices.Clip(cur), lt)
	t.loops.Store(&next)
	return true
}

// removeLoop withdraws lt, reporting whether t has no loop left; hand-offs
// already queued to lt find it empty.
func (t *topic) removeLoop(lt *localTopic) (empty bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	cur := *t.loops.Load()
	next := make([]*localTopic, 0, len(cur))
	for _, x := range cur {
		if x != lt {
			next = append(next, x)
		}
	}
	t.loops.Store(&next)
	return len(next) == 0
}

// join adds s to t's subscribers on sl. It reports false when t has been
// removed from the registry since it was looked up; then s joined nothing.
func (sl *subLoop) join(t *topic, s *subscriber) bool {
	lt := sl.topics[t]
	if lt == nil {
		lt = &localTopic{t: t, sl: sl}
		if !t.addLoop(lt) {
			return false
		}
		sl.topics[t] = lt
	}
	s.lt, s.idx = lt, len(lt.subs)
	lt.subs = append(lt.subs, s)
	return true
}

// leave removes s from its topic's subscribers, and the topic from the
// registry when s was its last subscriber on any loop.
func (sl *subLoop) leave(s *subscriber) {
	lt := s.lt
	if lt == nil {
		return
	}
	last := len(lt.subs) - 1
	if s.idx != last {
		lt.subs[s.idx] = lt.subs[last]
		lt.subs[s.idx].idx = s.idx
	}
	lt.subs[last] = nil
	lt.subs = lt.subs[:last]
	s.lt = nil
	if len(lt.subs) == 0 {
		delete(sl.topics, lt.t)
		if lt.t.removeLoop(lt) {
			sl.hub.release(lt.t)
		}
	}
}

// routed is one publish bound for one loop's subscribers of its topic.
type routed struct {
	lt *localTopic
	d  *delivery
}

// deliver runs on sl's loop with everything one publisher read meant for it.
func (sl *subLoop) deliver(srv *Server, rs []routed) {
	sl.handoffs.Add(1)
	immediate := srv.cfg.Window == 0
	for _, r := range rs {
		lt := r.lt
		for i := 0; i < len(lt.subs); i++ {
			s := lt.subs[i]
			s.enqueue(r.d, immediate)
			i = sl.revisit(lt, i, s)
		}
		if immediate && !lt.dirty && len(lt.subs) > 0 {
			lt.dirty = true
			sl.dirty = append(sl.dirty, lt)
		}
	}
	for i, lt := range sl.dirty {
		lt.dirty = false
		for j := 0; j < len(lt.subs); j++ {
			if s := lt.subs[j]; s.pendingEvents > 0 {
				s.flush()
				j = sl.revisit(lt, j, s)
			}
		}
		sl.dirty[i] = nil
	}
	sl.dirty = sl.dirty[:0]
}

// revisit returns the index to continue a walk of lt.subs from after
// visiting s at i: a failed write closes a connection at once, and its
// removal moves the last subscriber into i, which is then still to be visited.
func (sl *subLoop) revisit(lt *localTopic, i int, s *subscriber) int {
	if i < len(lt.subs) && lt.subs[i] != s {
		return i - 1
	}
	return i
}
