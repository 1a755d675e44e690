// Package looptimer is the timer heap of a reactor loop: deadlines that
// live in per-connection state, armed, moved and stopped in O(log n) without
// an allocation, and fired by the loop that owns them.
package looptimer

// Timer is a deadline on a loop. Embed it in per-connection state, set F
// once, and arm it with the loop's Schedule (reactor.Loop.Schedule); it runs F on the loop at or after its
// deadline, with the resolution of the server's Tick. A Timer is not safe for
// use on more than one loop.
type Timer struct {
	// F runs on the loop when the timer fires. It may re-arm the timer.
	F func()

	when  int64 // loop clock, nanoseconds
	index int   // 1 + position in the heap; 0 when not armed
}

// Armed reports whether the timer is scheduled.
func (t *Timer) Armed() bool { return t.index != 0 }

// When returns the deadline on the loop clock of an armed timer.
func (t *Timer) When() int64 { return t.when }

// Heap is a binary min-heap of armed timers ordered by deadline. Its zero
// value is empty. It is not safe for concurrent use: a loop owns its heap.
type Heap []*Timer

// Next returns the earliest deadline, or 0 when no timer is armed.
func (h *Heap) Next() int64 {
	if len(*h) == 0 {
		return 0
	}
	return (*h)[0].when
}

// Schedule arms t for when; an armed timer is moved.
func (h *Heap) Schedule(t *Timer, when int64) {
	if t.index != 0 {
		old := t.when
		t.when = when
		i := t.index - 1
		if when < old {
			h.up(i)
		} else {
			h.down(i)
		}
		return
	}
	t.when = when
	*h = append(*h, t)
	t.index = len(*h)
	h.up(len(*h) - 1)
}

// Stop disarms t; stopping a timer that is not armed does nothing.
func (h *Heap) Stop(t *Timer) {
	if t.index == 0 {
		return
	}
	i := t.index - 1
	last := len(*h) - 1
	if i != last {
		h.swap(i, last)
	}
	(*h)[last] = nil
	*h = (*h)[:last]
	t.index = 0
	if i != last {
		h.down(i)
		h.up(i)
	}
}

// PopDue removes and returns the earliest timer if it is due at now, and
// nil otherwise.
func (h *Heap) PopDue(now int64) *Timer {
	if len(*h) == 0 || (*h)[0].when > now {
		return nil
	}
	t := (*h)[0]
	h.Stop(t)
	return t
}

func (h Heap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i + 1
	h[j].index = j + 1
}

func (h Heap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if h[p].when <= h[i].when {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h Heap) down(i int) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h[r].when < h[l].when {
			m = r
		}
		if h[i].when <= h[m].when {
			return
		}
		h.swap(i, m)
		i = m
	}
}
