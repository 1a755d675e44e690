package docs_test

import (
	"os"
	"strings"
	"testing"
)

// tableRow is a body row of a Markdown table, with its line number.
type tableRow struct {
	line int
	text string
}

// sectionRows returns the body rows of the tables under the heading
// "## "+heading of the file at path, up to the next such heading: code
// fences, header rows and separator rows are left out. It fails the test
// when the section has no rows.
func sectionRows(t *testing.T, path, heading string) []tableRow {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var rows []tableRow
	inSection, inFence := false, false
	for i, line := range lines {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if inFence {
			continue
		}
		if strings.HasPrefix(line, "## ") {
			inSection = line == "## "+heading
		}
		isSeparator := func(l string) bool { return strings.HasPrefix(l, "|---") }
		if !inSection || !strings.HasPrefix(line, "|") || isSeparator(line) || (i+1 < len(lines) && isSeparator(lines[i+1])) {
			continue
		}
		rows = append(rows, tableRow{line: i + 1, text: line})
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no table rows under a %q heading", path, "## "+heading)
	}
	return rows
}
