package move

// Table holds the movable players of a loop's terminated sessions, by
// session; its zero value is empty and ready. A session has no room for a
// Player (it stays in one size class), so the loop keeps them.
type Table[K comparable] struct{ m map[K]*Player }

// Get returns k's player, nil when it has none.
func (t *Table[K]) Get(k K) *Player { return t.m[k] }

// Set gives k the player p.
func (t *Table[K]) Set(k K, p *Player) {
	if t.m == nil {
		t.m = make(map[K]*Player)
	}
	t.m[k] = p
}

// Delete forgets k's player, abandoning its move in flight.
func (t *Table[K]) Delete(k K) {
	if p := t.m[k]; p != nil && p.Move != nil {
		p.Move.Abort()
	}
	delete(t.m, k)
}
