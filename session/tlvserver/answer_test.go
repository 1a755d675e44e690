package tlvserver

import (
	"bytes"
	"errors"
	"testing"

	"github.com/tidegate/tidegate/protocol/tlv"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/reactor/writev"
)

// handlerFunc adapts a function to Handler.
type handlerFunc func(typ uint16, req []byte) (uint16, []byte)

func (h handlerFunc) Serve(typ uint16, req []byte) (uint16, []byte) { return h(typ, req) }

// newUnstarted returns a server that is never started, for its request loop.
func newUnstarted(t testing.TB, f tlv.Format, h Handler) *Server {
	t.Helper()
	s, err := New(Config{Reactor: reactor.Config{Addrs: []string{"tcp://127.0.0.1:0"}, Loops: 1}, Format: f, Handler: h})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// batchBytes returns what batch would write, and empties it.
func batchBytes(batch *writev.Batch) []byte {
	var out []byte
	for _, p := range batch.Bytes() {
		out = append(out, p...)
	}
	batch.Reset()
	return out
}

func TestAnswer(t *testing.T) {
	f := tlv.Format{TypeWidth: 1, LengthWidth: 4, MaxBody: 8192}
	wide := tlv.Format{TypeWidth: 2, LengthWidth: 2, MaxBody: 1000}
	frame := func(f tlv.Format, typ uint16, ka bool, body string) []byte {
		return f.AppendFrame(nil, tlv.Header{Type: typ, KeepAlive: ka}, []byte(body))
	}
	cat := func(frames ...[]byte) []byte { return bytes.Join(frames, nil) }
	big := string(bytes.Repeat([]byte("B"), 5000)) // past the batch's copy crossover: referenced
	upper := handlerFunc(func(typ uint16, req []byte) (uint16, []byte) {
		return typ, bytes.ToUpper(req) // a response of its own
	})
	inPlace := handlerFunc(func(typ uint16, req []byte) (uint16, []byte) {
		copy(req, bytes.ToUpper(req)) // changes the request and answers with it
		return typ, req
	})
	retype := handlerFunc(func(typ uint16, req []byte) (uint16, []byte) { return typ + 1, req })
	head := handlerFunc(func(typ uint16, req []byte) (uint16, []byte) { return typ, req[:min(len(req), 1)] })
	huge := make([]byte, 1<<16) // one byte more than a 2-byte length field holds
	unframable := handlerFunc(func(typ uint16, req []byte) (uint16, []byte) {
		switch typ {
		case 2:
			return 0x80, req // a 1-byte type field's keep-alive bit
		case 3:
			return typ, bytes.ToUpper(req)
		case 4:
			return typ, huge
		}
		return typ, req
	})
	cases := []struct {
		name       string
		f          tlv.Format
		h          Handler
		in         []byte
		out        []byte
		consumed   int
		requests   int64
		closeAfter bool
		bad        tlv.Reason
		badIs      error // the bad frame wraps it (with bad == 0)
	}{
		{name: "empty", f: f, h: Echo{}},
		{name: "partial header", f: f, h: Echo{}, in: frame(f, 1, true, "abc")[:3]},
		{name: "partial body", f: f, h: Echo{}, in: frame(f, 1, true, "abc")[:6]},
		{name: "one", f: f, h: Echo{}, in: frame(f, 1, true, "abc"), out: frame(f, 1, true, "abc"), consumed: 8, requests: 1},
		{name: "empty body", f: f, h: Echo{}, in: frame(f, 3, true, ""), out: frame(f, 3, true, ""), consumed: 5, requests: 1},
		{
			name: "pipelined, then a partial one", f: f, h: Echo{},
			in:  cat(frame(f, 1, true, "a"), frame(f, 2, true, ""), frame(f, 126, true, "ccc"), frame(f, 4, true, "dd")[:6]),
			out: cat(frame(f, 1, true, "a"), frame(f, 2, true, ""), frame(f, 126, true, "ccc")), consumed: 19, requests: 3,
		},
		{
			name: "large bodies referenced", f: f, h: Echo{},
			in:  cat(frame(f, 1, true, big), frame(f, 2, true, "x"), frame(f, 3, true, big)),
			out: cat(frame(f, 1, true, big), frame(f, 2, true, "x"), frame(f, 3, true, big)), consumed: 3*5 + 10001, requests: 3,
		},
		{
			name: "no keep-alive stops", f: f, h: Echo{},
			in:  cat(frame(f, 1, true, "a"), frame(f, 2, false, "b"), frame(f, 3, true, "c")),
			out: cat(frame(f, 1, true, "a"), frame(f, 2, false, "b")), consumed: 12, requests: 2, closeAfter: true,
		},
		{
			name: "body too large after good ones", f: f, h: Echo{},
			in:  cat(frame(f, 1, true, "a"), f.AppendHeader(nil, tlv.Header{Type: 2, KeepAlive: true, Length: 8193})),
			out: frame(f, 1, true, "a"), consumed: 6, requests: 1, bad: tlv.ReasonBodyTooLarge,
		},
		{
			name: "error type from client", f: f, h: Echo{},
			in:  cat(frame(f, 1, true, "a"), frame(f, f.ErrorType(), true, "e")),
			out: frame(f, 1, true, "a"), consumed: 6, requests: 1, bad: tlv.ReasonErrorTypeFromClient,
		},
		{
			name: "error type without keep-alive, partial", f: f, h: Echo{},
			in: frame(f, f.ErrorType(), false, "eee")[:5], bad: tlv.ReasonErrorTypeFromClient,
		},
		{
			name: "own responses between echoed ones", f: f, h: upper,
			in:       cat(frame(f, 1, true, "ab"), frame(f, 2, true, ""), frame(f, 3, false, big)),
			out:      cat(frame(f, 1, true, "AB"), frame(f, 2, true, ""), frame(f, 3, false, string(bytes.ToUpper([]byte(big))))),
			consumed: 17 + 5000, requests: 3, closeAfter: true,
		},
		{
			name: "changed in place", f: f, h: inPlace,
			in:  cat(frame(f, 1, true, "ab"), frame(f, 2, true, "cd")),
			out: cat(frame(f, 1, true, "AB"), frame(f, 2, true, "CD")), consumed: 14, requests: 2,
		},
		{
			name: "other type", f: f, h: retype,
			in:  cat(frame(f, 1, true, "ab"), frame(f, 5, false, "cd")),
			out: cat(frame(f, 2, true, "ab"), frame(f, 6, false, "cd")), consumed: 14, requests: 2, closeAfter: true,
		},
		{
			name: "part of the request", f: f, h: head,
			in:  cat(frame(f, 1, true, "ab"), frame(f, 2, true, "c"), frame(f, 3, true, "")),
			out: cat(frame(f, 1, true, "a"), frame(f, 2, true, "c"), frame(f, 3, true, "")), consumed: 18, requests: 3,
		},
		{
			name: "2-byte type, 2-byte length", f: wide, h: Echo{},
			in:  cat(frame(wide, 0x1234, true, "wide"), frame(wide, 0x7FFE, false, "")),
			out: cat(frame(wide, 0x1234, true, "wide"), frame(wide, 0x7FFE, false, "")), consumed: 12, requests: 2, closeAfter: true,
		},
		{
			name: "2-byte error type", f: wide, h: Echo{},
			in: cat(frame(wide, 9, true, ""), frame(wide, 0x7FFF, true, "")), out: frame(wide, 9, true, ""),
			consumed: 4, requests: 1, bad: tlv.ReasonErrorTypeFromClient,
		},
		{
			name: "response type the format cannot carry", f: f, h: unframable,
			in:  cat(frame(f, 1, true, "a"), frame(f, 3, true, "b"), frame(f, 2, true, "c"), frame(f, 1, true, "d")),
			out: cat(frame(f, 1, true, "a"), frame(f, 3, true, "B")), consumed: 12, requests: 2, badIs: tlv.ErrHeaderRange,
		},
		{
			name: "response longer than the length field", f: wide, h: unframable,
			in:  cat(frame(wide, 1, true, "a"), frame(wide, 4, true, "b")),
			out: frame(wide, 1, true, "a"), consumed: 5, requests: 1, badIs: tlv.ErrHeaderRange,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newUnstarted(t, tc.f, tc.h)
			var batch writev.Batch
			in := bytes.Clone(tc.in)
			consumed, requests, closeAfter, bad := s.answer(in, &batch)
			if out := batchBytes(&batch); !bytes.Equal(out, tc.out) {
				t.Errorf("responses %q, want %q", trim(out), trim(tc.out))
			}
			if consumed != tc.consumed || requests != tc.requests || closeAfter != tc.closeAfter {
				t.Errorf("consumed %d, requests %d, closeAfter %v; want %d, %d, %v",
					consumed, requests, closeAfter, tc.consumed, tc.requests, tc.closeAfter)
			}
			var fe *tlv.FrameError
			switch {
			case tc.badIs != nil:
				if !errors.Is(bad, tc.badIs) || errors.As(bad, &fe) {
					t.Errorf("bad frame %v, want one wrapping %v and no FrameError", bad, tc.badIs)
				}
			case tc.bad == 0 && bad != nil:
				t.Errorf("bad frame %v, want none", bad)
			case tc.bad != 0 && (!errors.As(bad, &fe) || fe.Reason != tc.bad):
				t.Errorf("bad frame %v, want reason %v", bad, tc.bad)
			}
		})
	}
}

// trim shortens long test output.
func trim(b []byte) []byte {
	if len(b) > 64 {
		return append(b[:64:64], "..."...)
	}
	return b
}

// BenchmarkAnswer is the server's work per read at pipeline 64 with 16-byte
// bodies (the rps benchmark's throughput cell), per request.
func BenchmarkAnswer(b *testing.B) {
	for _, bc := range []struct {
		name string
		h    Handler
	}{
		{"echo", Echo{}},
		{"own-response", handlerFunc(func(typ uint16, req []byte) (uint16, []byte) { return typ, req[:len(req)-1] })},
	} {
		b.Run(bc.name, func(b *testing.B) {
			f := tlv.DefaultFormat
			s := newUnstarted(b, f, bc.h)
			const pipeline = 64
			var in []byte
			for i := range pipeline {
				in = f.AppendFrame(in, tlv.Header{Type: uint16(i % 127), KeepAlive: true}, bytes.Repeat([]byte{byte(i)}, 16))
			}
			var batch writev.Batch
			b.ReportAllocs()
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				consumed, requests, _, bad := s.answer(in, &batch)
				if consumed != len(in) || requests != pipeline || bad != nil {
					b.Fatalf("consumed %d requests %d bad %v", consumed, requests, bad)
				}
				batch.Reset()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*pipeline), "ns/request")
		})
	}
}
