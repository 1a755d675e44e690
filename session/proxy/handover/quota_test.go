package handover

import "testing"

// TestLoopQuotasFitTheRoom: the loops of a hand-over round never detach
// more sessions between them than the room on the way holds, or one would
// block on the queue they share (and every session on it with it), and
// they use all of it.
func TestLoopQuotasFitTheRoom(t *testing.T) {
	for loops := 1; loops <= 8; loops++ {
		for room := 0; room <= 2048; room++ {
			sum := 0
			for i := range loops {
				sum += LoopQuota(room, loops, i)
			}
			if sum != room {
				t.Fatalf("%d loops with room for %d sessions may detach %d", loops, room, sum)
			}
		}
	}
}
