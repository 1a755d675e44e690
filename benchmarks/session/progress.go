package session

import (
	"fmt"
	"io"
	"strings"
	"sync"
)

// Bar is a one-line progress bar for a terminal: the phase, its label and
// the share of its echoes received.
type Bar struct {
	mu    sync.Mutex
	w     io.Writer
	i, n  int
	label string
}

// NewBar returns a Bar drawing on w, which should be a terminal.
func NewBar(w io.Writer) *Bar { return &Bar{w: w} }

// Phase starts phase i of n.
func (b *Bar) Phase(i, n int, label string) {
	b.mu.Lock()
	b.i, b.n, b.label = i, n, label
	b.mu.Unlock()
	b.Echoes(0, 1)
}

// Echoes redraws the bar.
func (b *Bar) Echoes(done, total int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	const width = 30
	frac := 0.0
	if total > 0 {
		frac = min(float64(done)/float64(total), 1)
	}
	full := int(frac * width)
	fmt.Fprintf(b.w, "\r\033[K[%s%s] phase %d/%d %s %3.0f%%", strings.Repeat("=", full), strings.Repeat(" ", width-full),
		b.i+1, b.n, b.label, 100*frac)
}

// Done clears the line.
func (b *Bar) Done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	fmt.Fprint(b.w, "\r\033[K")
}
