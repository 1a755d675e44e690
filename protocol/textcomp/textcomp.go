// Package textcomp reads the plain text of a Minecraft text component (a
// chat message, a Disconnect's reason) from either of its wire forms: the
// JSON of versions before 1.20.3 and the network NBT of 1.20.3 and later.
//
// The text is what a player reads with the styles left out: a
// component's text, then its extra children in order; a translate
// component shows its fallback, else its key; a bare string (JSON or NBT)
// is its own text; other kinds (keybind, score, selector) show nothing.
// It is for hostile input: the input's size, the nesting depth and the
// text's length are bounded, every step consumes input, and an error
// says what was wrong where. It imports nothing of this module.
package textcomp

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Bounds of what is read.
const (
	// MaxInput is the longest component read, in bytes (vanilla caps a
	// chat component's JSON at 262,144 characters).
	MaxInput = 1 << 18
	// MaxDepth is how deeply components may nest through extra (and how
	// deeply any NBT tag may nest, for those skipped).
	MaxDepth = 32
)

// ErrTooLong is why a component over MaxInput bytes is not read.
var ErrTooLong = errors.New("text component longer than the limit")

// text accumulates at most max bytes of plain text, cut at a rune boundary.
type text struct {
	b   strings.Builder
	max int
	cut bool
}

func (t *text) add(s string) {
	if t.cut || s == "" {
		return
	}
	room := t.max - t.b.Len()
	if len(s) > room {
		for room > 0 && !utf8.RuneStart(s[room]) {
			room--
		}
		s, t.cut = s[:room], true
	}
	t.b.WriteString(s)
}

// JSON returns at most max bytes of the plain text of component, a text
// component in JSON (a string, an object or an array), and whether the
// text was cut at max.
func JSON(component []byte, max int) (string, bool, error) {
	if len(component) > MaxInput {
		return "", false, fmt.Errorf("JSON of %d bytes: %w (%d)", len(component), ErrTooLong, MaxInput)
	}
	var v any
	if err := json.Unmarshal(component, &v); err != nil {
		return "", false, fmt.Errorf("text component JSON: %w", err)
	}
	t := text{max: max}
	if err := t.json(v, 0); err != nil {
		return "", false, err
	}
	return t.b.String(), t.cut, nil
}

// json adds the text of the decoded JSON component v at depth.
func (t *text) json(v any, depth int) error {
	if depth > MaxDepth {
		return fmt.Errorf("text component nested deeper than %d", MaxDepth)
	}
	switch c := v.(type) {
	case string:
		t.add(c)
	case bool, float64, nil:
		t.add(fmt.Sprint(c)) // vanilla reads a primitive as its string
	case []any:
		for _, e := range c {
			if err := t.json(e, depth+1); err != nil {
				return err
			}
		}
	case map[string]any:
		if s, ok := c["text"].(string); ok {
			t.add(s)
		} else if s, ok := c["translate"].(string); ok {
			if f, ok := c["fallback"].(string); ok {
				s = f
			}
			t.add(s)
		}
		if extra, ok := c["extra"]; ok {
			list, ok := extra.([]any)
			if !ok {
				return fmt.Errorf("text component's extra is a %T, want an array", extra)
			}
			for _, e := range list {
				if err := t.json(e, depth+1); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
