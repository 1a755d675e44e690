package reactor

import (
	"bytes"
	"testing"
)

// TestRecordQueuedKeepsTheQueuedSuffix: after every write, the copy ends
// with exactly the bytes gnet still has queued, the last ones written.
func TestRecordQueuedKeepsTheQueuedSuffix(t *testing.T) {
	var written []byte
	c := &Conn{}
	steps := []struct {
		write  string
		before int // queued before the write
		queued int // queued after it
	}{
		{"aaaa", 0, 0},          // all taken
		{"bbbbbbbb", 0, 3},      // partial: "bbb" queued
		{"cc", 3, 5},            // appended behind
		{"dddddd", 2, 8},        // gnet drained 3 meanwhile
		{"e", 8, 0},             // drained and taken
		{"ffffffffffff", 0, 12}, // nothing taken
		{"g", 1, 2},             // most drained
	}
	for i, st := range steps {
		written = append(written, st.write...)
		c.recordQueued(st.before, st.queued, []byte(st.write))
		want := written[len(written)-st.queued:]
		if len(c.shadow) < st.queued || !bytes.Equal(c.shadow[len(c.shadow)-st.queued:], want) {
			t.Fatalf("step %d: copy %q, want it to end with the %d queued bytes %q", i, c.shadow, st.queued, want)
		}
		if len(c.shadow) != st.queued {
			t.Fatalf("step %d: copy holds %d bytes for %d queued", i, len(c.shadow), st.queued)
		}
	}
}

// TestRecordQueuedSplitWrites: a vectored write records all its slices.
func TestRecordQueuedSplitWrites(t *testing.T) {
	c := &Conn{}
	c.recordQueued(0, 5, []byte("ab"), []byte("cdef"), []byte("gh"))
	if string(c.shadow) != "defgh" {
		t.Fatalf("copy %q, want %q", c.shadow, "defgh")
	}
	c.recordQueued(5, 0)
	if len(c.shadow) != 0 {
		t.Fatalf("copy %q after the queue drained", c.shadow)
	}
}
