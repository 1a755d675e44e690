package move

// Queue bounds the moves a send runs at once on one loop: the rest wait
// their turn, in order. It is used on its loop only; its zero value runs
// nothing at once, so set Max.
type Queue struct {
	Max     int // moves at once
	running int
	waiting []func(end func())
	pumping bool
}

// Run calls start now when fewer than Max of q's moves run, or once one of
// them ends. start must call end once, when its move has ended (at once
// when it did not start).
func (q *Queue) Run(start func(end func())) {
	q.waiting = append(q.waiting, start)
	q.pump()
}

// Waiting is how many moves wait for their turn.
func (q *Queue) Waiting() int { return len(q.waiting) }

// Running is how many moves run.
func (q *Queue) Running() int { return q.running }

// pump starts waiting moves while there is room; an end called from a
// start it runs makes room for the loop already running, not a deeper one.
func (q *Queue) pump() {
	if q.pumping {
		return
	}
	q.pumping = true
	for q.running < q.Max && len(q.waiting) > 0 {
		start := q.waiting[0]
		q.waiting[0] = nil
		q.waiting = q.waiting[1:]
		q.running++
		ended := false
		start(func() {
			if ended {
				return
			}
			ended = true
			q.running--
			q.pump()
		})
	}
	q.pumping = false
}
