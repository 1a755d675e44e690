// Package logbuf holds Buffer, where a test collects the log of a server or
// a command that writes it from goroutines of its own while the test reads
// it.
package logbuf

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"sync"
)

// Buffer is a bytes.Buffer safe for concurrent writes and reads. Its zero
// value is empty and ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p; it never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what has been written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// JSONLines decodes the lines written so far that are JSON objects (a
// zerolog logger's lines), in order; other lines are left out.
func (b *Buffer) JSONLines() []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(b.String()))
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}
