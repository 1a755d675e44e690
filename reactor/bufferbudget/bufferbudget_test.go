package bufferbudget

import "testing"

// TestInputFootprint: the estimate follows gnet's inbound ring buffer.
func TestInputFootprint(t *testing.T) {
	for _, tc := range [][2]int{{0, 0}, {1, 1024}, {1024, 1024}, {1025, 2048}, {3020, 4096}, {65536, 65536}, {65537, 131072}} {
		if got := InputFootprint(tc[0]); got != tc[1] {
			t.Errorf("InputFootprint(%d) = %d, want %d", tc[0], got, tc[1])
		}
	}
}

// TestTotals: both counts add into the one total the budget bounds.
func TestTotals(t *testing.T) {
	t.Cleanup(func() { queued.Store(0); held.Store(0) })
	if AddQueued(100) != 100 || AddHeld(50) != 150 || Queued() != 100 || Held() != 50 {
		t.Fatalf("queued %d held %d", Queued(), Held())
	}
	if !Over(149) || Over(150) || Over(0) {
		t.Fatalf("Over: 149 %v, 150 %v, 0 %v (total 150)", Over(149), Over(150), Over(0))
	}
	if AddQueued(-100) != 50 || AddHeld(-50) != 0 {
		t.Fatalf("after giving back: queued %d held %d", Queued(), Held())
	}
}
