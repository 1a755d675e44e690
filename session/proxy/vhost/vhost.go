// Package vhost maps virtual hosts, as a handshake names them, to what
// routes them: exact names, and wildcards (*.example.com) that match the
// names under their suffix at any depth.
package vhost

import "strings"

// Table maps normalized hosts (config.NormalizeHost) to values of R. The
// zero Table is empty; it is built with Add before it is shared, and then
// only read.
type Table[R any] struct {
	exact map[string]R
	wild  map[string]R // *.example.com as example.com
	// wildMin and wildMax are the shortest and longest keys of wild: only
	// suffixes of a host between them can match.
	wildMin, wildMax int
}

// Add maps host, normalized, to r: a name, or *.suffix for the names under
// suffix. A later Add of the same host replaces r.
func (t *Table[R]) Add(host string, r R) {
	suffix, ok := strings.CutPrefix(host, "*.")
	if !ok {
		if t.exact == nil {
			t.exact = map[string]R{}
		}
		t.exact[host] = r
		return
	}
	if t.wild == nil {
		t.wild = map[string]R{}
	}
	t.wild[suffix] = r
	if len(t.wild) == 1 || len(suffix) < t.wildMin {
		t.wildMin = len(suffix)
	}
	t.wildMax = max(t.wildMax, len(suffix))
}

// Lookup returns the value of a normalized host: the one naming it, else
// the wildcard's with the longest suffix of it (*.b.example.com before
// *.example.com; a wildcard never matches its suffix itself), else false.
// It does not allocate: the map lookups convert the byte slices in place.
func (t *Table[R]) Lookup(host []byte) (R, bool) {
	if r, ok := t.exact[string(host)]; ok {
		return r, true
	}
	var none R
	if len(t.wild) == 0 {
		return none, false
	}
	// Label suffixes from the longest: a.b.example.com tries
	// b.example.com, then example.com, then com.
	for i, c := range host {
		if c != '.' {
			continue
		}
		switch rest := len(host) - i - 1; {
		case rest > t.wildMax:
			continue
		case rest < t.wildMin:
			return none, false
		}
		if r, ok := t.wild[string(host[i+1:])]; ok {
			return r, true
		}
	}
	return none, false
}
