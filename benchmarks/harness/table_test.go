package harness

import (
	"strings"
	"testing"
)

func TestMarkdownTable(t *testing.T) {
	var b strings.Builder
	if err := MarkdownTable(&b, []string{"target", "rate", "note"}, "lr", [][]string{{"a", "1", OrDash("")}, {"b", "2", "x"}}); err != nil {
		t.Fatal(err)
	}
	want := "| target | rate | note |\n|---|--:|---|\n| a | 1 | – |\n| b | 2 | x |\n"
	if b.String() != want {
		t.Errorf("MarkdownTable wrote\n%s\nwant\n%s", b.String(), want)
	}
}

func TestMedianRatio(t *testing.T) {
	a, b := Of([]float64{4, 6}), Of([]float64{2})
	if r, ok := MedianRatio(a, b); !ok || r != 2.5 {
		t.Errorf("MedianRatio(%v, %v) = %v, %v; want 2.5, true", a, b, r, ok)
	}
	for _, c := range []struct{ a, b Spread }{{a, Spread{}}, {Spread{}, b}, {a, Of([]float64{0})}} {
		if r, ok := MedianRatio(c.a, c.b); ok || r != 0 {
			t.Errorf("MedianRatio(%v, %v) = %v, %v; want 0, false", c.a, c.b, r, ok)
		}
	}
	if s := Fixed(2.345, 1); s != "2.3" {
		t.Errorf("Fixed(2.345, 1) = %q", s)
	}
}

func TestTextTable(t *testing.T) {
	for _, c := range []struct {
		table TextTable
		want  string
	}{
		{TextTable{}, "name  n\nab    1\nc     22\n"},
		{TextTable{Right: true, Closed: true}, "  name   n\n    ab   1\n     c  22\n"},
	} {
		var b strings.Builder
		if err := c.table.Write(&b, []string{"name", "n"}, [][]string{{"ab", "1"}, {"c", "22"}}); err != nil {
			t.Fatal(err)
		}
		if b.String() != c.want {
			t.Errorf("%+v wrote %q, want %q", c.table, b.String(), c.want)
		}
	}
}
