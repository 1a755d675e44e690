package push

import "testing"

func TestAppendSSEEvent(t *testing.T) {
	cases := map[string]string{
		"":          "data: \n\n",
		"hello":     "data: hello\n\n",
		"a\nb":      "data: a\ndata: b\n\n",
		"a\r\nb\rc": "data: a\ndata: b\ndata: c\n\n",
		"end\n":     "data: end\ndata: \n\n",
	}
	for in, want := range cases {
		if got := string(AppendSSEEvent(nil, []byte(in))); got != want {
			t.Errorf("AppendSSEEvent(%q) = %q, want %q", in, got, want)
		}
		if HasLineBreak([]byte(in)) != (len(want) > len("data: \n\n")+len(in)) {
			t.Errorf("HasLineBreak(%q) wrong", in)
		}
	}
	if got := string(AppendDropMeta(nil, 42)); got != `{"tidegate.meta":"droppedMessageCount","value":"42"}` {
		t.Fatalf("AppendDropMeta = %s", got)
	}
}
