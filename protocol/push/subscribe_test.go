package push

import (
	"errors"
	"strings"
	"testing"
)

func TestParseSubscribe(t *testing.T) {
	cases := []struct {
		in    string
		topic string
		n     int
		err   string // "" ok, "incomplete", "error"
	}{
		{"SUBSCRIBE prices\n", "prices", 17, ""},
		{"SUBSCRIBE prices\r\nextra", "prices", 18, ""},
		{"", "", 0, "incomplete"},
		{"SUBS", "", 0, "incomplete"},
		{"SUBSCRIBE pri", "", 0, "incomplete"},
		{"GET / HTTP/1.1\r\n", "", 0, "error"},
		{"SUBSCRIBE\n", "", 0, "error"},
		{"SUBSCRIBE \n", "", 0, "error"},
		{"SUBSCRIBE a b\n", "", 0, "error"},
		{"subscribe x\n", "", 0, "error"},
		{"SUBSCRIBE " + strings.Repeat("a", MaxTopicLen) + "\r\n", strings.Repeat("a", MaxTopicLen), MaxSubscribeLine, ""},
		{"SUBSCRIBE " + strings.Repeat("a", MaxTopicLen+2), "", 0, "error"},
	}
	for _, tc := range cases {
		topic, n, err := ParseSubscribe([]byte(tc.in))
		switch tc.err {
		case "":
			if err != nil || string(topic) != tc.topic || n != tc.n {
				t.Errorf("ParseSubscribe(%q) = %q, %d, %v; want %q, %d", tc.in, topic, n, err, tc.topic, tc.n)
			}
		case "incomplete":
			if !errors.Is(err, ErrIncomplete) {
				t.Errorf("ParseSubscribe(%q) = %v, want ErrIncomplete", tc.in, err)
			}
		default:
			if err == nil || errors.Is(err, ErrIncomplete) {
				t.Errorf("ParseSubscribe(%q) = %v, want an error", tc.in, err)
			}
		}
	}
	if got := string(AppendSubscribe(nil, []byte("x"))); got != "SUBSCRIBE x\n" {
		t.Fatalf("AppendSubscribe = %q", got)
	}
}
