package push

import (
	"errors"
	"strings"
	"testing"
)

func TestParseHTTPRequest(t *testing.T) {
	cases := []struct {
		in     string
		topic  string
		status int // 0 ok, -1 incomplete
	}{
		{"GET /events?topic=prices HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n", "prices", 0},
		{"GET /events?topic=a%2Eb&x=1 HTTP/1.0\n\n", "a.b", 0},
		{"GET /events?topic=p HTTP/1.1\r\nHost: x\r\n", "", -1},
		{"GET /events?topic=p", "", -1},
		{"", "", -1},
		{"POST /events?topic=p HTTP/1.1\r\n\r\n", "", 405},
		{"GET /other HTTP/1.1\r\n\r\n", "", 404},
		{"GET /events HTTP/1.1\r\n\r\n", "", 400},
		{"GET /events?topic=a+b HTTP/1.1\r\n\r\n", "", 400},
		{"GET /events?topic=%zz HTTP/1.1\r\n\r\n", "", 400},
		{"GET /events?topic=p HTTP/2.0\r\n\r\n", "", 505},
		{"GET /events?topic=p FTP/1.1\r\n\r\n", "", 400},
		{"GET\r\n\r\n", "", 400},
		{" GET / HTTP/1.1\r\n\r\n", "", 400},
		{"G(T / HTTP/1.1", "", 400},
		{"GET /events?topic=p HTTP/1.1\r\nBad Header\r\n\r\n", "", 400},
		{"GET /events?topic=p HTTP/1.1\r\n: empty\r\n\r\n", "", 400},
		{"GET /events?topic=p HTTP/1.1\r\nX: a\x01b\r\n\r\n", "", 400},
		{"GET /events?topic=p HTTP/1.1\r\nX: " + strings.Repeat("a", DefaultMaxHeader) + "\r\n\r\n", "", 431},
		{"\x16\x03\x01\x02\x00", "", 400},
	}
	for _, tc := range cases {
		req, n, err := ParseHTTPRequest([]byte(tc.in), DefaultMaxHeader)
		switch tc.status {
		case 0:
			if err != nil || req.Topic != tc.topic || n != len(tc.in) {
				t.Errorf("ParseHTTPRequest(%q) = %q, %d, %v; want %q, %d", tc.in, req.Topic, n, err, tc.topic, len(tc.in))
			}
		case -1:
			if !errors.Is(err, ErrIncomplete) {
				t.Errorf("ParseHTTPRequest(%q) = %v, want ErrIncomplete", tc.in, err)
			}
		default:
			var he *HTTPError
			if !errors.As(err, &he) || he.Status != tc.status {
				t.Errorf("ParseHTTPRequest(%.40q) = %v, want status %d", tc.in, err, tc.status)
				continue
			}
			resp := string(AppendHTTPError(nil, he))
			if !strings.HasPrefix(resp, "HTTP/1.1 ") || !strings.Contains(resp, "Connection: close\r\n\r\n"+he.Reason) {
				t.Errorf("AppendHTTPError = %q", resp)
			}
		}
	}
}
