package ssepeer

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/leaktest"
	"github.com/tidegate/tidegate/protocol/push"
	"github.com/tidegate/tidegate/protocol/tlv"
)

// TestMain fails the run when the tests leave goroutines running or, on
// Linux, descriptors open.
func TestMain(m *testing.M) { os.Exit(leaktest.MainFDs(m)) }

func start(t *testing.T, buffer int) *Server {
	t.Helper()
	s, err := New(Config{PublishAddr: "127.0.0.1:0", SubscribeAddr: "127.0.0.1:0", Buffer: buffer})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	return s
}

func publishFrame(t *testing.T, topic string, events ...[]byte) []byte {
	t.Helper()
	body, err := push.AppendPublish(nil, []byte(topic), events...)
	if err != nil {
		t.Fatal(err)
	}
	return tlv.DefaultFormat.AppendFrame(nil, tlv.Header{Type: push.TypePublish}, body)
}

// subscribe opens an SSE stream and reads its response head.
func subscribe(t *testing.T, s *Server, topic string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", s.SubscribeAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, "GET /events?topic="+topic+" HTTP/1.1\r\nHost: t\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	status, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(status, "HTTP/1.1 200 ") {
		t.Fatalf("status line %q, %v", status, err)
	}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.EqualFold(strings.TrimSpace(line), "Transfer-Encoding: chunked") {
			t.Fatal("the stream is chunked")
		}
		if line == "\r\n" {
			return c, r
		}
	}
}

// TestEventsInOrderAndBadFrame: every subscriber of a topic gets every event,
// in order, as one data line each; a frame of another type gets an error
// frame and ends its publisher.
func TestEventsInOrderAndBadFrame(t *testing.T) {
	s := start(t, 0)
	_, r1 := subscribe(t, s, "a")
	_, r2 := subscribe(t, s, "a")
	pc, err := net.Dial("tcp", s.PublishAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if _, err := pc.Write(append(publishFrame(t, "a", []byte("one"), []byte("two")), publishFrame(t, "b", []byte("other"))...)); err != nil {
		t.Fatal(err)
	}
	if _, err := pc.Write(publishFrame(t, "a", []byte("three"))); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*bufio.Reader{r1, r2} {
		for _, want := range []string{"one", "two", "three"} {
			line, err := r.ReadString('\n')
			blank, _ := r.ReadString('\n')
			if err != nil || line != "data: "+want+"\n" || blank != "\n" {
				t.Fatalf("event %q, %q, %v; want data: %s", line, blank, err, want)
			}
		}
	}
	if _, err := pc.Write(tlv.DefaultFormat.AppendFrame(nil, tlv.Header{Type: 2}, []byte("x"))); err != nil {
		t.Fatal(err)
	}
	_ = pc.SetReadDeadline(time.Now().Add(10 * time.Second))
	reply, _ := io.ReadAll(pc)
	h, _, err := tlv.DefaultFormat.Decode(reply)
	if err != nil || h.Type != tlv.DefaultFormat.ErrorType() {
		t.Fatalf("reply to a bad frame %q: type %d, %v", reply, h.Type, err)
	}
	if st := s.Stats(); st.Published != 4 || st.BadFrames != 1 || st.Subscribers != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// TestSlowSubscriberDisconnected: a subscriber that does not read is
// disconnected once its channel is full; publishing goes on for the others.
func TestSlowSubscriberDisconnected(t *testing.T) {
	s := start(t, 4)
	stuck, _ := subscribe(t, s, "a")
	pc, err := net.Dial("tcp", s.PublishAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	big := []byte(strings.Repeat("x", 60<<10))
	for deadline := time.Now().Add(20 * time.Second); s.Stats().SlowClosed == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("no slow subscriber closed: %+v", s.Stats())
		}
		if _, err := pc.Write(publishFrame(t, "a", big, big, big, big)); err != nil {
			t.Fatal(err)
		}
	}
	_ = stuck.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, stuck); err != nil {
		t.Fatalf("the stuck subscriber's stream did not end: %v", err)
	}
	for deadline := time.Now().Add(10 * time.Second); s.Stats().Subscribers != 0; {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v: the slow subscriber is still registered", s.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
