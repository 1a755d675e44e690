package push

import (
	"bytes"
	"errors"
	"testing"
)

func FuzzParsePublish(f *testing.F) {
	b, _ := AppendPublish(nil, []byte("t"), []byte("a"), nil, []byte("hello"))
	f.Add(b)
	f.Add([]byte{})
	f.Add([]byte{1, 't', 0xFF, 0xFF, 0xFF, 0xFF})
	f.Add([]byte{1, 't', 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, body []byte) {
		lim := Limits{MaxEvents: 8, MaxEventSize: 64}
		p, err := ParsePublish(body, lim)
		if err != nil {
			var pe *PublishError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *PublishError", err)
			}
			return
		}
		if p.Count < 1 || p.Count > lim.MaxEvents {
			t.Fatalf("count %d out of bounds", p.Count)
		}
		var events [][]byte
		total := 0
		for it := p.Events(); ; {
			e, ok := it.Next()
			if !ok {
				break
			}
			if len(e) > lim.MaxEventSize {
				t.Fatalf("event of %d bytes passed", len(e))
			}
			events, total = append(events, e), total+len(e)
		}
		if len(events) != p.Count || total != p.PayloadBytes {
			t.Fatalf("iterated %d events / %d bytes, parsed %d / %d", len(events), total, p.Count, p.PayloadBytes)
		}
		again, err := AppendPublish(nil, p.Topic, events...)
		if err != nil || !bytes.Equal(again, body) {
			t.Fatalf("re-encoding differs: %v", err)
		}
	})
}

func FuzzParseSubscribe(f *testing.F) {
	f.Add([]byte("SUBSCRIBE prices\n"))
	f.Add([]byte("SUBSCRIBE prices\r\n"))
	f.Add([]byte("SUBSCRIBE "))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		topic, n, err := ParseSubscribe(b)
		if err != nil {
			if n != 0 || topic != nil {
				t.Fatalf("error %v with n=%d topic=%q", err, n, topic)
			}
			if errors.Is(err, ErrIncomplete) && len(b) >= MaxSubscribeLine {
				t.Fatalf("incomplete at %d bytes", len(b))
			}
			return
		}
		if n > len(b) || n > MaxSubscribeLine || CheckTopic(topic) != nil {
			t.Fatalf("n=%d topic=%q", n, topic)
		}
		if again, n2, err := ParseSubscribe(AppendSubscribe(nil, topic)); err != nil || !bytes.Equal(again, topic) || n2 != len(topic)+len(SubscribeVerb)+1 {
			t.Fatalf("round trip of %q: %q %d %v", topic, again, n2, err)
		}
	})
}

func FuzzParseHTTPRequest(f *testing.F) {
	f.Add([]byte("GET /events?topic=prices HTTP/1.1\r\nHost: x\r\n\r\n"))
	f.Add([]byte("POST /x HTTP/1.1\r\n\r\n"))
	f.Add([]byte("GET /events?topic=%41 HTTP/1.0\n\n"))
	f.Add([]byte("GET /events?topic=p HTTP/1.1\r\nX: y"))
	f.Fuzz(func(t *testing.T, b []byte) {
		const maxHeader = 256
		req, n, err := ParseHTTPRequest(b, maxHeader)
		if err != nil {
			var he *HTTPError
			if errors.Is(err, ErrIncomplete) {
				if len(b) >= maxHeader {
					t.Fatalf("incomplete at %d bytes with limit %d", len(b), maxHeader)
				}
				return
			}
			if !errors.As(err, &he) || he.Status < 400 || he.Status > 599 {
				t.Fatalf("unexpected error %v", err)
			}
			_ = AppendHTTPError(nil, he)
			return
		}
		if n <= 0 || n > len(b) || n > maxHeader || CheckTopic([]byte(req.Topic)) != nil || string(req.Method) != "GET" {
			t.Fatalf("accepted n=%d req=%+v", n, req)
		}
	})
}

func FuzzDecodeFrame(f *testing.F) {
	f.Add(AppendFrame(nil, []byte("t"), AppendEvent(nil, OpNext, []byte("x"))))
	f.Add([]byte{0, 0, 0, 2, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, n, err := DecodeFrame(b, 1024)
		if err != nil {
			return
		}
		if n > len(b) || len(fr.Topic) > MaxTopicLen {
			t.Fatalf("n=%d topic %d bytes", n, len(fr.Topic))
		}
		for rest := fr.Events; len(rest) > 0; {
			_, _, r, err := NextEvent(rest)
			if err != nil {
				return
			}
			if len(r) >= len(rest) {
				t.Fatal("NextEvent made no progress")
			}
			rest = r
		}
	})
}
