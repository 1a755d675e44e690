package harness

import "testing"

func TestOf(t *testing.T) {
	for _, c := range []struct {
		in          []float64
		want        Spread
		text, short string
	}{
		{[]float64{3, 1, 2}, Spread{Median: 2, Min: 1, Max: 3, N: 3}, "2 [1–3]", "2 [1–3]"},
		{[]float64{4, 1, 2, 10}, Spread{Median: 3, Min: 1, Max: 10, N: 4}, "3 [1–10]", "3 [1–10]"},
		{[]float64{7}, Spread{Median: 7, Min: 7, Max: 7, N: 1}, "7 [7–7]", "7"},
		{nil, Spread{}, "–", "–"},
	} {
		got := Of(c.in)
		if got != c.want || got.Format(0) != c.text || got.Short(0) != c.short {
			t.Errorf("Of(%v) = %+v %q %q, want %+v %q %q", c.in, got, got.Format(0), got.Short(0), c.want, c.text, c.short)
		}
	}
	if s := Of([]float64{1.25, 2.5}).Format(1); s != "1.9 [1.2–2.5]" {
		t.Errorf("Format(1) = %q", s)
	}
	in := []float64{3, 1, 2}
	Of(in)
	if in[0] != 3 || in[1] != 1 {
		t.Errorf("Of sorted its argument: %v", in)
	}
}
