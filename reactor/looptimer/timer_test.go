package looptimer

import (
	"math/rand/v2"
	"testing"
)

func TestTimerHeap(t *testing.T) {
	var h Heap
	rng := rand.New(rand.NewPCG(3, 4))
	ts := make([]*Timer, 200)
	for i := range ts {
		ts[i] = &Timer{}
		h.Schedule(ts[i], int64(rng.IntN(1000)))
	}
	for i := 0; i < 50; i++ {
		h.Stop(ts[rng.IntN(len(ts))])
	}
	for i := 0; i < 50; i++ {
		h.Schedule(ts[rng.IntN(len(ts))], int64(rng.IntN(1000)))
	}
	last := int64(-1)
	n := 0
	for tm := h.PopDue(1 << 62); tm != nil; tm = h.PopDue(1 << 62) {
		if tm.when < last {
			t.Fatalf("popped %d after %d", tm.when, last)
		}
		if tm.index != 0 {
			t.Fatal("popped timer still has an index")
		}
		last = tm.when
		n++
	}
	armed := 0
	for _, tm := range ts {
		if tm.Armed() {
			armed++
		}
	}
	if armed != 0 || len(h) != 0 {
		t.Fatalf("%d timers still armed after popping %d", armed, n)
	}
}
