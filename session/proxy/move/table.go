package move

import "github.com/tidegate/tidegate/internal/keyed"

// Table holds the movable players of a loop's terminated sessions, by
// session; its zero value is empty and ready. A session has no room for a
// Player (it stays in one size class), so the loop keeps them.
type Table[K comparable] struct{ keyed.Map[K, *Player] }

// Delete forgets k's player, abandoning its move in flight.
func (t *Table[K]) Delete(k K) {
	if p := t.Get(k); p != nil && p.Move != nil {
		p.Move.Abort()
	}
	t.Map.Delete(k)
}
