package move

import "testing"

// TestQueueBoundsMovesAtOnce: no more than Max run; each end starts the
// next in order; a start that ends at once (a move refused) makes room
// without recursion; ending twice counts once.
func TestQueueBoundsMovesAtOnce(t *testing.T) {
	q := Queue{Max: 2}
	var ends []func()
	var order []int
	for i := range 6 {
		q.Run(func(end func()) {
			order = append(order, i)
			if i == 1 || i == 3 { // refused at once
				end()
				return
			}
			ends = append(ends, end)
		})
		if q.Running() > 2 {
			t.Fatalf("after %d: %d running, want at most 2", i, q.Running())
		}
	}
	// 0 runs, 1 ends at once, 2 runs: full; 3, 4, 5 wait.
	if q.Running() != 2 || q.Waiting() != 3 || len(order) != 3 {
		t.Fatalf("running %d, waiting %d, started %v; want 2, 3, [0 1 2]", q.Running(), q.Waiting(), order)
	}
	ends[0]()
	ends[0]() // twice: no effect
	// 3 starts and ends at once, 4 runs.
	if q.Running() != 2 || q.Waiting() != 1 {
		t.Fatalf("after an end: running %d, waiting %d; want 2 and 1", q.Running(), q.Waiting())
	}
	for len(ends) > 0 {
		e := ends[len(ends)-1]
		ends = ends[:len(ends)-1]
		e()
	}
	for i, got := range order {
		if got != i {
			t.Fatalf("started in order %v", order)
		}
	}
	if len(order) != 6 || q.Running() != 0 || q.Waiting() != 0 {
		t.Fatalf("started %v, running %d, waiting %d", order, q.Running(), q.Waiting())
	}
}
