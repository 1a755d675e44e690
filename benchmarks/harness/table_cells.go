package harness

import "strings"

// Cell makes a message fit in one Markdown table cell: "–" when empty,
// '|' written as '/', newlines as spaces, and at most limit bytes (then
// "..."; 0: no limit).
func Cell(s string, limit int) string {
	if s == "" {
		return "–"
	}
	s = strings.ReplaceAll(s, "|", "/")
	s = strings.ReplaceAll(s, "\n", " ")
	if limit > 0 && len(s) > limit {
		s = s[:limit] + "..."
	}
	return s
}

// YesNo writes a yes/no cell.
func YesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}
