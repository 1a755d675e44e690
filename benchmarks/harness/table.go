package harness

import (
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// MarkdownTable writes a Markdown table: the header, the alignment row
// (align has an 'l' or 'r' per column; a column past its end is
// left-aligned) and the rows, each cell as given.
func MarkdownTable(w io.Writer, header []string, align string, rows [][]string) error {
	var b strings.Builder
	b.WriteString("| " + strings.Join(header, " | ") + " |\n|")
	for i := range header {
		if i < len(align) && align[i] == 'r' {
			b.WriteString("--:|")
		} else {
			b.WriteString("---|")
		}
	}
	b.WriteString("\n")
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// OrDash returns s, or "–" for an empty cell: an empty cell reads as a
// column left out.
func OrDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// Fixed writes v with decimals digits after the point.
func Fixed(v float64, decimals int) string { return strconv.FormatFloat(v, 'f', decimals, 64) }

// MedianRatio divides a's median by b's; ok is false, and the ratio 0,
// where either spread is empty or b's median is 0: a ratio of nothing is
// not a figure.
func MedianRatio(a, b Spread) (ratio float64, ok bool) {
	if a.N == 0 || b.N == 0 || b.Median == 0 {
		return 0, false
	}
	return a.Median / b.Median, true
}

// TextTable lays a table out for a terminal: the header and the rows in
// columns padded with spaces, two between columns.
type TextTable struct {
	// Right aligns every column to the right (figures); else to the left.
	Right bool
	// Closed ends every row with a column separator, so that the last
	// column is padded to its width too.
	Closed bool
}

// Write writes header and rows, each cell as given.
func (t TextTable) Write(w io.Writer, header []string, rows [][]string) error {
	var flags uint
	if t.Right {
		flags = tabwriter.AlignRight
	}
	end := "\n"
	if t.Closed {
		end = "\t\n"
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', flags)
	for _, r := range append([][]string{header}, rows...) {
		if _, err := io.WriteString(tw, strings.Join(r, "\t")+end); err != nil {
			return err
		}
	}
	return tw.Flush()
}

// ByCount returns the keys of counts, the largest count first and equal
// counts by name: the order in which the reports list reasons (refusals,
// failures) so that the common ones lead and a rerun lists them alike.
func ByCount(counts map[string]int) []string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if counts[keys[i]] != counts[keys[j]] {
			return counts[keys[i]] > counts[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}
