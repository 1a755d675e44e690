// Package keyed holds Map, the table a loop keeps a session's side state
// in (its ciphers, its login's state, its re-framing, its move) when the
// session itself has no room for it: a session stays in one size class.
package keyed

// Map maps keys (a loop's sessions) to values. Its zero value is empty and
// ready. It has no lock: one loop owns it.
type Map[K comparable, V any] struct{ m map[K]V }

// Get returns k's value, the zero value when it has none.
func (t *Map[K, V]) Get(k K) V { return t.m[k] }

// Lookup returns k's value and whether it has one.
func (t *Map[K, V]) Lookup(k K) (V, bool) {
	v, ok := t.m[k]
	return v, ok
}

// Set gives k the value v.
func (t *Map[K, V]) Set(k K, v V) {
	if t.m == nil {
		t.m = make(map[K]V)
	}
	t.m[k] = v
}

// Delete forgets k.
func (t *Map[K, V]) Delete(k K) { delete(t.m, k) }

// Len returns how many keys have a value.
func (t *Map[K, V]) Len() int { return len(t.m) }
