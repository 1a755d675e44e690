package logbuf

import (
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWritesAndReads: writers and a reader at once (the race
// detector checks the locking), and every write is kept whole.
func TestConcurrentWritesAndReads(t *testing.T) {
	var b Buffer
	const writers, lines = 4, 200
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range lines {
				if n, err := b.Write([]byte("a line\n")); n != 7 || err != nil {
					t.Errorf("Write: %d, %v", n, err)
					return
				}
			}
		}()
	}
	for range lines {
		_ = b.String()
	}
	wg.Wait()
	if got := b.String(); got != strings.Repeat("a line\n", writers*lines) {
		t.Fatalf("%d bytes, want %d whole lines", len(got), writers*lines)
	}
}
