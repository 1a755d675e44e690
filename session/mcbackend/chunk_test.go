package mcbackend

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/reactor"
)

// chunkRequest returns the body of a chunk request for size bytes carrying
// tag, built from the documented layout rather than AppendChunkRequest.
func chunkRequest(size uint32, tag string) []byte {
	b := append([]byte{0x7F}, "tgck"...)
	b = binary.BigEndian.AppendUint32(b, size)
	return append(b, tag...)
}

// chunkReply returns the frame that answers request body req for size
// bytes, from the filler formula the backend's help documents.
func chunkReply(req []byte, size int) []byte {
	body := append([]byte(nil), req...)
	for i := len(req); i < size; i++ {
		j := i % 65521
		body = append(body, byte(j*131+j/256+17))
	}
	return rawFrame(body)
}

func chunkDriver(threshold int, on bool) *driver {
	d := newDriver(threshold)
	d.m.cfg.chunkReplies = on
	return d
}

// TestChunkRequestsAreAnswered: with chunk replies on, each request is
// replaced by its reply and the frames around it are echoed unchanged, in
// order, however the input is cut; without them, and on a compressed
// connection, the stream is echoed as it came.
func TestChunkRequestsAreAnswered(t *testing.T) {
	login, _ := session1710()
	login = login[:bytes.Index(login, mc.AppendPacket(nil, 0x03, playPacket(0, 0)))]
	reqA, reqB := chunkRequest(9000, "first"), chunkRequest(14, "exact")
	frames := [][]byte{
		mc.AppendPacket(nil, 0x03, playPacket(1, 60)),
		rawFrame(reqA),
		rawFrame(reqB), // a reply exactly as long as its request
		mc.AppendPacket(nil, 0x03, playPacket(2, 150)),
		rawFrame(append([]byte{0x7F}, "tgcX and more"...)), // the ID without the magic
		mc.AppendPacket(nil, 0x03, playPacket(3, 0)),
	}
	play := bytes.Join(frames, nil)
	want := bytes.Join([][]byte{frames[0], chunkReply(reqA, 9000), chunkReply(reqB, 14), frames[3], frames[4], frames[5]}, nil)

	whole := chunkDriver(-1, true)
	whole.feed(login)
	answers := len(whole.sent)
	whole.feed(play)
	if whole.err != nil || !bytes.Equal(whole.sent[answers:], want) {
		t.Fatalf("err %v; output of %d bytes, want %d", whole.err, len(whole.sent)-answers, len(want))
	}
	if st := whole.m.counters; st.chunkReplies.Load() != 2 || st.chunkReplyBytes.Load() != int64(len(chunkReply(reqA, 9000))+len(chunkReply(reqB, 14))) {
		t.Fatalf("chunk replies %d, bytes %d", st.chunkReplies.Load(), st.chunkReplyBytes.Load())
	}
	for split := 1; split < len(play); split++ {
		d := chunkDriver(-1, true)
		d.feed(login)
		d.feed(play[:split])
		d.feed(play[split:])
		if d.err != nil || !bytes.Equal(d.sent[answers:], want) {
			t.Fatalf("split at %d: err %v, output differs", split, d.err)
		}
	}

	off := chunkDriver(-1, false)
	off.feed(login)
	off.feed(play)
	if off.err != nil || !bytes.Equal(off.sent[answers:], play) {
		t.Fatalf("chunk replies off: err %v, the stream was not echoed unchanged", off.err)
	}

	// A compressed connection: the request travels in the compressed
	// framing and comes back as it went.
	stream, _ := session764(64)
	z := chunkDriver(64, true)
	z.feed(stream)
	before := len(z.sent)
	req := encodeFrame(chunkRequest(9000, "z"), 64)
	z.feed(req)
	if z.err != nil || !bytes.Equal(z.sent[before:], req) {
		t.Fatalf("compressed: err %v, the request was not echoed", z.err)
	}
}

func TestBadChunkRequestIsRejected(t *testing.T) {
	login, _ := session1710()
	login = login[:bytes.Index(login, mc.AppendPacket(nil, 0x03, playPacket(0, 0)))]
	for _, size := range []uint32{13, MaxChunkReply + 1} {
		d := chunkDriver(-1, true)
		d.feed(login)
		answers := len(d.sent)
		echo := mc.AppendPacket(nil, 0x03, playPacket(1, 10))
		d.feed(append(append([]byte(nil), echo...), rawFrame(chunkRequest(size, "abcde"))...))
		if reasonOf(d.err) != ReasonBadChunkRequest || d.err == nil {
			t.Fatalf("size %d: err %v, want %s", size, d.err, ReasonBadChunkRequest)
		}
		if !bytes.Equal(d.sent[answers:], echo) {
			t.Fatalf("size %d: the frame before the bad request was not echoed", size)
		}
	}
}

// TestChunkRepliesThroughTheServer asks a real backend for chunk replies,
// with and without the reply delay, which queues them apart from the batch.
func TestChunkRepliesThroughTheServer(t *testing.T) {
	for _, hold := range []time.Duration{0, 2 * time.Millisecond} {
		srv, addr := startBackend(t, Config{ChunkReplies: true, ReplyDelay: hold, Reactor: reactor.Config{Loops: 1}})
		c := login1710(t, addr, "Chunky")
		var sent, want []byte
		for i := range 20 {
			f := c.frame(0x03, playPacket(uint32(i), 40+i))
			sent, want = append(sent, f...), append(want, f...)
			if i%4 == 0 {
				req := AppendChunkRequest(nil, 8<<10+i*997)
				req = append(req, byte(i))
				sent, want = append(sent, rawFrame(req)...), append(want, chunkReply(req, 8<<10+i*997)...)
			}
		}
		c.write(sent)
		got := make([]byte, len(want))
		if _, err := io.ReadFull(c.r, got); err != nil {
			t.Fatalf("hold %v: reading %d bytes: %v", hold, len(want), err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("hold %v: the replies differ", hold)
		}
		if st := srv.Stats(); st.ChunkReplies != 5 || st.EchoFrames != 25 {
			t.Fatalf("hold %v: chunk replies %d, echo frames %d; want 5 and 25", hold, st.ChunkReplies, st.EchoFrames)
		}
	}
}

// TestChunkRepliesToAClientThatDoesNotRead: a client that asks for a
// thousand 1 MiB replies in one write and reads nothing gets the backend to
// hold at most its high watermark and one reply of output (before each
// reply went out, the whole read was answered: ~1 GiB queued); once it
// reads, every reply arrives, in order.
func TestChunkRepliesToAClientThatDoesNotRead(t *testing.T) {
	const high, requests = 256 << 10, 1000
	srv, addr := startBackend(t, Config{ChunkReplies: true,
		Reactor: reactor.Config{HighWatermark: high, LowWatermark: high / 2, Loops: 1}})
	c := login1710(t, addr, "Hoarder")
	req := append(AppendChunkRequest(nil, MaxChunkReply), 'x')
	frame := rawFrame(req)
	c.write(bytes.Repeat(frame, requests)) // 10 KB: one read on the backend's side
	waitfor.For(t, "the backend to pause the connection", func() bool { return srv.Stats().Reactor.PauseEvents > 0 })
	time.Sleep(50 * time.Millisecond) // had it gone on answering, it would have queued more meanwhile
	_, out, err := srv.Buffered()
	if err != nil {
		t.Fatal(err)
	}
	if limit := high + MaxChunkReply + 64<<10; out > limit {
		t.Fatalf("backend holds %d bytes of output for a client that does not read; want at most %d", out, limit)
	}
	if st := srv.Stats(); st.ChunkReplies >= requests {
		t.Fatalf("all %d requests answered before the client read anything", st.ChunkReplies)
	}
	want := chunkReply(req, MaxChunkReply)
	got := make([]byte, len(want))
	_ = c.conn.SetDeadline(time.Now().Add(60 * time.Second))
	for i := range requests {
		if _, err := io.ReadFull(c.r, got); err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("reply %d differs", i)
		}
	}
	if st := srv.Stats(); st.ChunkReplies != requests {
		t.Fatalf("chunk replies %d, want %d", st.ChunkReplies, requests)
	}
}
