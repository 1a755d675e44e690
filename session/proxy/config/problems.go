package config

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	goccy "github.com/goccy/go-yaml"
	goccyparser "github.com/goccy/go-yaml/parser"
)

// Problem is one thing wrong (or, as a warning, suspicious) in a
// configuration.
type Problem struct {
	// Line and Col are where in the file, counted from 1. Both are 0 when
	// the problem is about something the file does not set (a missing
	// listener, say) or the configuration was not read from a file.
	Line, Col int
	// Path is the key the problem is about, as listeners[0].listen or
	// groups.main.backends[1].addr; "" for the file as a whole.
	Path string
	// Msg says what is wrong, in the operator's words.
	Msg string
}

// String formats p as line:col: path: msg, leaving out the parts p has not.
func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		b.WriteString(strconv.Itoa(p.Line))
		if p.Col > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(p.Col))
		}
		b.WriteString(": ")
	}
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Error is every problem found in one configuration. Its Error prints one
// problem a line, each as file:line:col: path: msg.
type Error struct {
	// File is the name the problems are reported under; "" for a
	// configuration that was not read from a file.
	File     string
	Problems []Problem
}

// Error lists the problems, one a line.
func (e *Error) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		if e.File != "" {
			b.WriteString(e.File)
			// file:4:5: reads as one location; file: path: as a name.
			if p.Line > 0 {
				b.WriteByte(':')
			} else {
				b.WriteString(": ")
			}
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// sortProblems orders problems as they appear in the file; those without a
// position (keys the file does not set) go last, in the order found.
func sortProblems(ps []Problem) {
	slices.SortStableFunc(ps, func(a, b Problem) int {
		if (a.Line == 0) != (b.Line == 0) {
			if a.Line == 0 {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
}

// syntaxProblem turns yaml.v3's refusal of a document into a Problem with a
// position. yaml.v3 names at most a line, and often the line where the
// enclosing block started rather than where the mistake is, so the document
// is parsed again with goccy/go-yaml, whose errors carry the line and column
// of the offending token. yaml.v3 stays the judge of what is valid: goccy
// only places an error yaml.v3 found; when it finds none, yaml.v3's own
// message and line are used.
func syntaxProblem(data []byte, v3err error) Problem {
	if p, ok := locateSyntaxError(data); ok {
		return p
	}
	msg := strings.TrimPrefix(v3err.Error(), "yaml: ")
	p := Problem{Msg: "syntax error: " + msg}
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, tail, ok := strings.Cut(rest, ": "); ok {
			if line, err := strconv.Atoi(n); err == nil && line > 0 {
				p.Line, p.Msg = line, "syntax error: "+tail
			}
		}
	}
	return p
}

// locateSyntaxError parses data with goccy/go-yaml and returns its first
// syntax error, positioned. A panic in that parser (it is only asked about
// documents already known to be broken, the inputs parsers handle least
// well) must not take the loader down with it: it counts as no answer.
func locateSyntaxError(data []byte) (p Problem, ok bool) {
	defer func() {
		if recover() != nil {
			p, ok = Problem{}, false
		}
	}()
	_, err := goccyparser.ParseBytes(data, 0)
	if err == nil {
		return Problem{}, false
	}
	ge, isGoccy := err.(goccy.Error)
	if !isGoccy || ge.GetToken() == nil || ge.GetToken().Position == nil {
		return Problem{}, false
	}
	pos := ge.GetToken().Position
	return Problem{Line: pos.Line, Col: pos.Column, Msg: "syntax error: " + ge.GetMessage()}, true
}

// suggestKey returns the known key closest to key, or "" when none is close
// enough to be a likely misspelling.
func suggestKey(key string, known []string) string {
	// A third of the key's length, at least 1 and at most 3 edits: colr
	// and color, handshake_timout and handshake_timeout, but not mode and
	// group.
	limit := min(max(len(key)/3, 1), 3)
	best, bestDist := "", limit+1
	for _, k := range known {
		if d := editDistance(strings.ToLower(key), k); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b,
// in bytes (keys are ASCII): Levenshtein's insertions, deletions and
// substitutions, plus swapping two neighbours, the commonest typo (mian for
// main), as one edit.
func editDistance(a, b string) int {
	// Three rows of the table: the one before the previous is for swaps.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// unknownKeyMsg is the message for a key not among known: a suggestion when
// one is close, else the keys that are allowed there.
func unknownKeyMsg(key string, known []string) string {
	if s := suggestKey(key, known); s != "" {
		return fmt.Sprintf("unknown key (did you mean %q?)", s)
	}
	return "unknown key; the keys here are " + JoinWords(known)
}

// JoinWords lists words as "a, b and c", as problems do; the admin API
// lists names in its errors the same way.
func JoinWords(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}
