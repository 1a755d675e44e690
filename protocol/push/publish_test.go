package push

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func mustPublish(t *testing.T, topic string, events ...[]byte) []byte {
	t.Helper()
	b, err := AppendPublish(nil, []byte(topic), events...)
	if err != nil {
		t.Fatalf("AppendPublish(%q): %v", topic, err)
	}
	return b
}

func TestParsePublishRoundTrip(t *testing.T) {
	events := [][]byte{[]byte("a"), {}, bytes.Repeat([]byte{7}, 300), []byte("last")}
	body := mustPublish(t, "orders.eu", events...)
	p, err := ParsePublish(body, DefaultLimits)
	if err != nil {
		t.Fatalf("ParsePublish: %v", err)
	}
	if string(p.Topic) != "orders.eu" || p.Count != len(events) || p.PayloadBytes != 305 {
		t.Fatalf("got topic %q count %d bytes %d", p.Topic, p.Count, p.PayloadBytes)
	}
	it := p.Events()
	for i, want := range events {
		got, ok := it.Next()
		if !ok || !bytes.Equal(got, want) {
			t.Fatalf("event %d = %q, %v; want %q", i, got, ok, want)
		}
	}
	if _, ok := it.Next(); ok {
		t.Fatal("iterator yields more events than were encoded")
	}
}

func TestParsePublishErrors(t *testing.T) {
	lim := Limits{MaxEvents: 2, MaxEventSize: 10}
	valid := mustPublish(t, "t", []byte("x"))
	cases := []struct {
		name string
		body []byte
		want PublishReason
	}{
		{"empty", nil, ReasonShortBody},
		{"topic past end", []byte{5, 't'}, ReasonTruncated},
		{"empty topic", []byte{0, 0, 0, 0, 0}, ReasonBadTopic},
		{"topic with space", append([]byte{3}, "a b\x00\x00\x00\x00"...), ReasonBadTopic},
		{"topic too long", append([]byte{127}, strings.Repeat("a", 127)+"\x00\x00\x00\x00"...), ReasonBadTopic},
		{"no events", []byte{1, 't'}, ReasonNoEvents},
		{"short event length", append(append([]byte{}, valid...), 0, 0), ReasonTruncated},
		{"event past end", []byte{1, 't', 0, 0, 0, 5, 'a'}, ReasonTruncated},
		{"event too large", []byte{1, 't', 0, 0, 0, 11}, ReasonEventTooLarge},
		{"huge event length", []byte{1, 't', 0xFF, 0xFF, 0xFF, 0xFF}, ReasonEventTooLarge},
		{"too many events", mustPublish(t, "t", nil, nil, nil), ReasonTooManyEvents},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePublish(tc.body, lim)
			var pe *PublishError
			if !errors.As(err, &pe) || pe.Reason != tc.want {
				t.Fatalf("ParsePublish(%x) = %v, want reason %v", tc.body, err, tc.want)
			}
			if pe.Error() == "" || pe.Reason.String() == "" {
				t.Fatal("empty error text")
			}
		})
	}
}

func TestAppendPublishRejectsBadTopic(t *testing.T) {
	if _, err := AppendPublish(nil, []byte("has space")); err == nil {
		t.Fatal("AppendPublish accepted a topic with a space")
	}
}

func TestCheckTopic(t *testing.T) {
	for _, ok := range []string{"a", "orders.eu-1", strings.Repeat("z", MaxTopicLen), "~!"} {
		if err := CheckTopic([]byte(ok)); err != nil {
			t.Errorf("CheckTopic(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", " ", "a b", "tab\t", "\x7f", "é", strings.Repeat("z", MaxTopicLen+1)} {
		if err := CheckTopic([]byte(bad)); err == nil {
			t.Errorf("CheckTopic(%q) accepted", bad)
		}
	}
}
