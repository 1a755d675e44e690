package keyed

import "testing"

// TestMap: the zero Map is ready; Set, Get, Lookup and Delete agree.
func TestMap(t *testing.T) {
	var m Map[int, string]
	if got, ok := m.Lookup(1); ok || got != "" || m.Get(1) != "" || m.Len() != 0 {
		t.Fatalf("zero Map: Lookup(1) = %q, %v; Len %d", got, ok, m.Len())
	}
	m.Delete(1) // on the zero Map: nothing to forget
	m.Set(1, "a")
	m.Set(2, "b")
	if got, ok := m.Lookup(1); !ok || got != "a" || m.Get(2) != "b" || m.Len() != 2 {
		t.Fatalf("after Set: Lookup(1) = %q, %v; Get(2) = %q; Len %d", got, ok, m.Get(2), m.Len())
	}
	m.Delete(1)
	if _, ok := m.Lookup(1); ok || m.Len() != 1 {
		t.Fatalf("after Delete(1): still there, or Len %d", m.Len())
	}
}
