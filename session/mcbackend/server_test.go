package mcbackend

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/reactor"
)

func TestStatus(t *testing.T) {
	srv, addr := startBackend(t, Config{})
	for _, version := range []int32{mc.Protocol1_7_10, mc.Protocol1_20_2, 767, -1} {
		c := dialClient(t, addr)
		// Handshake and request in one write, as clients do.
		c.write(append(handshake(version, "localhost", mc.NextStateStatus), c.frame(mc.PacketStatusRequest, nil)...))
		id, data := c.recv()
		mustEqual(t, "status response id", id, mc.PacketStatusResponse)
		r := mc.NewReader(data)
		var status struct {
			Version struct {
				Name     string `json:"name"`
				Protocol int32  `json:"protocol"`
			} `json:"version"`
			Players struct {
				Max    int `json:"max"`
				Online int `json:"online"`
			} `json:"players"`
			Description struct {
				Text string `json:"text"`
			} `json:"description"`
		}
		if err := json.Unmarshal([]byte(readString(t, &r)), &status); err != nil {
			t.Fatalf("status JSON: %v", err)
		}
		if version == -1 {
			version = mc.Protocol1_20_2 // a ping that names no version
		}
		mustEqual(t, "version.protocol", status.Version.Protocol, version)
		mustEqual(t, "version.name", status.Version.Name, "tidegate-backend")
		mustEqual(t, "players.max", status.Players.Max, 100)
		mustEqual(t, "players.online", status.Players.Online, 0)
		mustEqual(t, "description.text", status.Description.Text, "tidegate fake backend")

		c.send(mc.PacketPing, []byte{1, 2, 3, 4, 5, 6, 7, 8})
		id, data = c.recv()
		mustEqual(t, "pong id", id, mc.PacketPong)
		if !bytes.Equal(data, []byte{1, 2, 3, 4, 5, 6, 7, 8}) {
			t.Fatalf("pong payload %x", data)
		}
		c.expectClosed()
	}
	st := srv.Stats()
	mustEqual(t, "status requests", st.StatusRequests, 4)
	mustEqual(t, "pings", st.Pings, 4)
	mustEqual(t, "rejected", st.Rejected(), 0)
}

// TestStatusProtocolAndDescription: a backend configured with its own
// protocol number and description announces them to every client, as a
// real server announces its version (the description is JSON-escaped).
func TestStatusProtocolAndDescription(t *testing.T) {
	_, addr := startBackend(t, Config{StatusProtocol: 764, StatusDescription: `Survival "one"`})
	for _, version := range []int32{-1, mc.Protocol1_7_10} {
		c := dialClient(t, addr)
		c.write(append(handshake(version, "localhost", mc.NextStateStatus), c.frame(mc.PacketStatusRequest, nil)...))
		_, data := c.recv()
		r := mc.NewReader(data)
		want := `{"version":{"name":"tidegate-backend","protocol":764},"players":{"max":100,"online":0},"description":{"text":"Survival \"one\""}}`
		if s := readString(t, &r); s != want {
			t.Fatalf("client %d: status %s\nwant %s", version, s, want)
		}
	}
}

// TestStatusCountsPlayers checks that "online" counts connections in play.
func TestStatusCountsPlayers(t *testing.T) {
	_, addr := startBackend(t, Config{})
	for _, name := range []string{"Alex", "Steve"} {
		c := dialClient(t, addr)
		c.write(handshake(mc.Protocol1_7_10, "localhost", mc.NextStateLogin))
		c.send(mc.PacketLoginStart, loginStartData(mc.Protocol1_7_10, name))
		if id, _ := c.recv(); id != mc.PacketLoginSuccess {
			t.Fatalf("login success id 0x%02x", id)
		}
	}
	c := dialClient(t, addr)
	c.write(handshake(mc.Protocol1_20_2, "localhost", mc.NextStateStatus))
	c.send(mc.PacketStatusRequest, nil)
	_, data := c.recv()
	r := mc.NewReader(data)
	if s := readString(t, &r); !bytes.Contains([]byte(s), []byte(`"online":2`)) {
		t.Fatalf("status %s does not count 2 players online", s)
	}
}

// login1710 logs a 1.7.10 Forge client in and checks Login Success.
func login1710(t *testing.T, addr, name string) *testClient {
	t.Helper()
	return login1710On(t, dialClient(t, addr), name)
}

// login1710On logs c in as a 1.7.10 client named name.
func login1710On(t *testing.T, c *testClient, name string) *testClient {
	t.Helper()
	c.write(handshake(mc.Protocol1_7_10, "localhost"+mc.ForgeFML.Marker(), mc.NextStateLogin))
	c.send(mc.PacketLoginStart, loginStartData(mc.Protocol1_7_10, name))
	id, data := c.recv()
	mustEqual(t, "login success id", id, mc.PacketLoginSuccess)
	r := mc.NewReader(data)
	wantUUID := string(mc.AppendUUID(nil, mc.OfflineUUID([]byte(name)), true))
	mustEqual(t, "uuid", readString(t, &r), wantUUID)
	mustEqual(t, "username", readString(t, &r), name)
	mustEqual(t, "trailing bytes", r.Remaining(), 0)
	return c
}

func TestLogin1710EchoSplitAtEveryByte(t *testing.T) {
	srv, addr := startBackend(t, Config{})
	c := login1710(t, addr, "Steve")

	var stream []byte
	for i, size := range []int{0, 5, 130} { // 130 bytes needs a two-byte length
		stream = append(stream, c.frame(0x03, playPacket(uint32(i), size))...)
	}
	stream = append(stream, mc.AppendVarInt(nil, 0)...) // an empty frame is echoed too
	got := make([]byte, len(stream))
	for split := 1; split < len(stream); split++ {
		c.write(stream[:split])
		time.Sleep(time.Millisecond) // let the backend see the partial frame on its own
		c.write(stream[split:])
		if _, err := io.ReadFull(c.r, got); err != nil {
			t.Fatalf("split %d: read echo: %v", split, err)
		}
		if !bytes.Equal(got, stream) {
			t.Fatalf("split %d: echo differs:\n got %x\nwant %x", split, got, stream)
		}
	}
	// A frame larger than one read, then many small ones in one write.
	big := c.frame(0x03, playPacket(99, 300<<10))
	var many []byte
	for i := range 500 {
		many = append(many, c.frame(0x03, playPacket(uint32(i), i%40))...)
	}
	c.write(append(big, many...))
	got = make([]byte, len(big)+len(many))
	if _, err := io.ReadFull(c.r, got); err != nil {
		t.Fatalf("read big echo: %v", err)
	}
	if !bytes.Equal(got, append(big, many...)) {
		t.Fatal("big echo differs")
	}
	st := srv.Stats()
	mustEqual(t, "play started", st.PlayStarted, 1)
	mustEqual(t, "echo bytes", st.EchoBytes, int64((len(stream)-1)*len(stream)+len(big)+len(many)))
}

// login764 takes a client of protocol version through login and
// configuration and returns it in play, with what the backend sent when
// play began.
func loginModern(t *testing.T, addr string, version int32, threshold int, name string) (*testClient, []int32) {
	t.Helper()
	c := dialClient(t, addr)
	c.write(handshake(version, "localhost", mc.NextStateLogin))
	c.send(mc.PacketLoginStart, loginStartData(version, name))
	id, data := c.recv()
	if threshold >= 0 {
		mustEqual(t, "set compression id", id, mc.PacketSetCompression)
		got, err := mc.ParseSetCompression(append([]byte{mc.PacketSetCompression}, data...))
		if err != nil {
			t.Fatalf("set compression: %v", err)
		}
		mustEqual(t, "threshold", int(got), threshold)
		c.threshold = threshold
		id, data = c.recv()
	}
	mustEqual(t, "login success id", id, mc.PacketLoginSuccess)
	r := mc.NewReader(data)
	uuid, err := r.ReadBytes(16)
	if err != nil {
		t.Fatalf("uuid: %v", err)
	}
	want := mc.OfflineUUID([]byte(name))
	if !bytes.Equal(uuid, want[:]) {
		t.Fatalf("uuid %x, want %x", uuid, want)
	}
	mustEqual(t, "username", readString(t, &r), name)
	props, err := r.ReadVarInt()
	if err != nil || props != 0 {
		t.Fatalf("properties %d, %v; want 0", props, err)
	}
	wantRest := 0
	if version >= mc.Protocol1_20_5 && version < 768 {
		wantRest = 1 // strict error handling
	}
	mustEqual(t, "bytes after properties", r.Remaining(), wantRest)

	c.send(packetLoginAcknowledged, nil)
	finish := int32(0x02)
	if version >= mc.Protocol1_20_5 {
		finish = 0x03
	}
	id, _ = c.recv()
	mustEqual(t, "finish configuration id", id, finish)
	c.send(0x00, []byte("client information, ignored"))
	c.send(finish, nil)
	var first []int32
	if version <= 765 {
		id, data = c.recv()
		first = append(first, id)
		if id == packetJoinGame1202 {
			checkJoinGame(t, data)
		}
	}
	return c, first
}

// checkJoinGame decodes Login (play) the way go-mc v1.20.2's bot/basic and
// the vanilla 1.20.2 client do.
func checkJoinGame(t *testing.T, data []byte) {
	t.Helper()
	r := mc.NewReader(data)
	eid, _ := r.ReadBytes(4)
	hardcore, _ := r.ReadBytes(1)
	dims, _ := r.ReadVarInt()
	for range dims {
		readString(t, &r)
	}
	maxPlayers, _ := r.ReadVarInt()
	view, _ := r.ReadVarInt()
	sim, _ := r.ReadVarInt()
	flags, _ := r.ReadBytes(3)
	dimType := readString(t, &r)
	dimName := readString(t, &r)
	seed, _ := r.ReadInt64()
	modes, _ := r.ReadBytes(2)
	tail, _ := r.ReadBytes(3)
	portal, err := r.ReadVarInt()
	if err != nil || r.Remaining() != 0 {
		t.Fatalf("join game: portal cooldown %d, %v, %d bytes left", portal, err, r.Remaining())
	}
	if !bytes.Equal(eid, []byte{0, 0, 0, 1}) || hardcore[0] != 0 || dims != 1 || maxPlayers != 100 || view != 2 ||
		sim != 2 || !bytes.Equal(flags, []byte{0, 1, 0}) || dimType != "minecraft:overworld" ||
		dimName != "minecraft:overworld" || seed != 0 || !bytes.Equal(modes, []byte{0, 0xFF}) ||
		!bytes.Equal(tail, []byte{0, 0, 0}) {
		t.Fatalf("join game fields: %x", data)
	}
}

func TestLoginModernEcho(t *testing.T) {
	for _, tc := range []struct {
		name      string
		version   int32
		threshold int // -1: compression off
	}{
		{"1.20.2", mc.Protocol1_20_2, -1},
		{"1.20.2/threshold-64", mc.Protocol1_20_2, 64},
		{"1.20.2/threshold-0", mc.Protocol1_20_2, 0},
		{"1.20.4/threshold-256", 765, 256},
		{"1.20.5", mc.Protocol1_20_5, -1},
		{"1.21.4/threshold-64", 769, 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Compression: tc.threshold >= 0, CompressionThreshold: max(tc.threshold, 0)}
			srv, addr := startBackend(t, cfg)
			c, first := loginModern(t, addr, tc.version, tc.threshold, "Player1")
			if tc.version <= 765 && (len(first) != 1 || first[0] != packetJoinGame1202) {
				t.Fatalf("first play packets %v, want Login (play) 0x29", first)
			}
			var sent []byte
			for i, size := range []int{0, 10, 59, 60, 61, 200, 40 << 10} {
				sent = append(sent, c.frame(0x03, playPacket(uint32(i), size))...)
			}
			c.write(sent)
			got := make([]byte, len(sent))
			if _, err := io.ReadFull(c.r, got); err != nil {
				t.Fatalf("read echo: %v", err)
			}
			if !bytes.Equal(got, sent) {
				t.Fatal("echo differs from what was sent")
			}
			st := srv.Stats()
			mustEqual(t, "echo frames", st.EchoFrames, 7)
			mustEqual(t, "playing", st.Playing, 1)
		})
	}
}

// loginToConfiguration logs a 1.20.2 client in on c up to Finish
// Configuration, which it leaves unacknowledged.
func loginToConfiguration(t *testing.T, c *testClient) {
	t.Helper()
	c.write(handshake(mc.Protocol1_20_2, "localhost", mc.NextStateLogin))
	c.send(mc.PacketLoginStart, loginStartData(mc.Protocol1_20_2, "a"))
	if id, _ := c.recv(); id != mc.PacketLoginSuccess {
		t.Fatalf("id 0x%02x", id)
	}
	c.send(packetLoginAcknowledged, nil)
	if id, _ := c.recv(); id != 0x02 {
		t.Fatalf("finish configuration id 0x%02x", id)
	}
}

func TestSkipJoinGame(t *testing.T) {
	_, addr := startBackend(t, Config{SkipJoinGame: true})
	c := dialClient(t, addr)
	loginToConfiguration(t, c)
	// The acknowledgement and a play frame in one write: the first frame back is the echo.
	c.write(append(c.frame(0x02, nil), c.frame(0x07, []byte("x"))...))
	id, data := c.recv()
	if id != 0x07 || string(data) != "x" {
		t.Fatalf("first play frame 0x%02x %q, want the echo", id, data)
	}
}

// TestJoinGameDelay: with JoinGameDelay, Login (play) comes that long after
// the acknowledgement at the earliest, after the echo of a frame sent with it.
func TestJoinGameDelay(t *testing.T) {
	const delay = 300 * time.Millisecond
	_, addr := startBackend(t, Config{JoinGameDelay: delay})
	c := dialClient(t, addr)
	loginToConfiguration(t, c)
	acked := time.Now()
	c.write(append(c.frame(0x02, nil), c.frame(0x07, []byte("x"))...))
	if id, data := c.recv(); id != 0x07 || string(data) != "x" {
		t.Fatalf("first play frame 0x%02x %q, want the echo before the held Login (play)", id, data)
	}
	if id, _ := c.recv(); id != packetJoinGame1202 {
		t.Fatalf("second play frame 0x%02x, want Login (play) 0x%02x", id, packetJoinGame1202)
	}
	if waited := time.Since(acked); waited < delay {
		t.Fatalf("Login (play) came %v after the acknowledgement, want at least %v", waited, delay)
	}
}

func TestBadInputClosesAndCounts(t *testing.T) {
	tooLong := mc.AppendVarInt(nil, DefaultMaxLoginFrameLength+1)
	for _, tc := range []struct {
		name   string
		cfg    Config
		input  func(c *testClient) []byte
		reason func(Stats) int64
	}{
		{"handshake with wrong packet id", Config{}, func(c *testClient) []byte {
			return c.frame(0x05, []byte{1, 2, 3})
		}, func(s Stats) int64 { return s.BadHandshake }},
		{"handshake next state 7", Config{}, func(c *testClient) []byte {
			return handshake(mc.Protocol1_7_10, "localhost", 7)
		}, func(s Stats) int64 { return s.BadHandshake }},
		{"transfer before 1.20.5", Config{}, func(c *testClient) []byte {
			return handshake(mc.Protocol1_20_2, "localhost", mc.NextStateTransfer)
		}, func(s Stats) int64 { return s.BadHandshake }},
		{"legacy ping", Config{}, func(c *testClient) []byte {
			return []byte{0xFE, 0x01, 0xFA}
		}, func(s Stats) int64 { return s.LegacyPing }},
		{"oversized login frame", Config{}, func(c *testClient) []byte {
			return tooLong
		}, func(s Stats) int64 { return s.BadFrame }},
		{"length prefix of 4 bytes", Config{}, func(c *testClient) []byte {
			return []byte{0x80, 0x80, 0x80, 0x01}
		}, func(s Stats) int64 { return s.BadFrame }},
		{"username of 17 bytes", Config{}, func(c *testClient) []byte {
			return append(handshake(5, "h", 2), c.frame(0, mc.AppendString(nil, []byte("abcdefghijklmnopq")))...)
		}, func(s Stats) int64 { return s.BadLoginStart }},
		{"status packet 0x07", Config{}, func(c *testClient) []byte {
			return append(handshake(5, "h", 1), c.frame(0x07, nil)...)
		}, func(s Stats) int64 { return s.UnexpectedPacket }},
		{"second status request", Config{}, func(c *testClient) []byte {
			return append(handshake(5, "h", 1), append(c.frame(0, nil), c.frame(0, nil)...)...)
		}, func(s Stats) int64 { return s.UnexpectedPacket }},
		{"short ping", Config{}, func(c *testClient) []byte {
			return append(handshake(5, "h", 1), c.frame(1, []byte{1, 2})...)
		}, func(s Stats) int64 { return s.BadStatus }},
		{"wrong packet for login acknowledged", Config{}, func(c *testClient) []byte {
			return append(append(handshake(764, "h", 2), c.frame(0, loginStartData(764, "a"))...), c.frame(0x02, nil)...)
		}, func(s Stats) int64 { return s.UnexpectedPacket }},
		{"compressed login ack below threshold", Config{Compression: true, CompressionThreshold: 256}, func(c *testClient) []byte {
			in := append(handshake(764, "h", 2), c.frame(0, loginStartData(764, "a"))...)
			return append(in, encodeFrame([]byte{packetLoginAcknowledged}, 0)...) // deflated though tiny
		}, func(s Stats) int64 { return s.BadCompression }},
		{"zlib garbage", Config{Compression: true, CompressionThreshold: 0}, func(c *testClient) []byte {
			in := append(handshake(764, "h", 2), c.frame(0, loginStartData(764, "a"))...)
			return append(in, 0x05, 0x01, 0xde, 0xad, 0xbe, 0xef)
		}, func(s Stats) int64 { return s.BadCompression }},
		{"play frame below threshold", Config{Compression: true, CompressionThreshold: 256}, func(c *testClient) []byte {
			in := append(handshake(47, "h", 2), c.frame(0, loginStartData(47, "a"))...)
			return append(in, encodeFrame([]byte{0x03, 1, 2, 3}, 0)...)
		}, func(s Stats) int64 { return s.BadCompression }},
		{"play frame too large", Config{MaxFrameLength: 100}, func(c *testClient) []byte {
			in := append(handshake(5, "h", 2), c.frame(0, loginStartData(5, "a"))...)
			return append(in, c.frame(0x03, make([]byte, 100))...)
		}, func(s Stats) int64 { return s.BadFrame }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, addr := startBackend(t, tc.cfg)
			c := dialClient(t, addr)
			c.write(tc.input(c))
			c.expectClosed()
			waitfor.For(t, "the reason to be counted", func() bool { return tc.reason(srv.Stats()) == 1 })
			mustEqual(t, "rejected", srv.Stats().Rejected(), 1)
			waitfor.For(t, "the connection to close", func() bool { return srv.Stats().Reactor.Active == 0 })
		})
	}
}

func TestLoginTimeout(t *testing.T) {
	srv, addr := startBackend(t, Config{LoginTimeout: 100 * time.Millisecond})
	c := dialClient(t, addr)
	hs := handshake(mc.Protocol1_20_2, "localhost", mc.NextStateLogin)
	c.write(hs[:len(hs)-2]) // part of a handshake, then nothing
	start := time.Now()
	c.expectClosed()
	// Only tells the login timeout from none (expectClosed waits 5 s): 20
	// times the timeout, which a loop timer overshoots by a tick or so.
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("closed after %v, want about 100ms", d)
	}
	waitfor.For(t, "the timeout to be counted", func() bool { return srv.Stats().Timeouts == 1 })
	mustEqual(t, "rejected", srv.Stats().Rejected(), 0)

	// A client that reaches play in time is not closed later.
	c = login1710(t, addr, "Quick")
	// A check that nothing happens (the login timer was stopped at play):
	// load can only hide a late close, not cause one.
	time.Sleep(300 * time.Millisecond)
	c.send(0x03, []byte("still here"))
	if id, data := c.recv(); id != 0x03 || string(data) != "still here" {
		t.Fatalf("echo 0x%02x %q", id, data)
	}
	mustEqual(t, "timeouts", srv.Stats().Timeouts, 1)
}

// fillUntilBlocked writes 1 KiB play frames to c until a write has not
// completed for 300ms, and returns the bytes written and the size of one
// frame (the last one may be partly written). A backend that still reads
// would have to go unscheduled for those 300 ms with the kernel's buffers
// full to pass for blocked; a loaded 2-core machine runs it every few ms.
func fillUntilBlocked(t *testing.T, c *testClient) (written, frameLen int) {
	t.Helper()
	frame := c.frame(0x03, playPacket(1, 1020))
	total := 0
	for total < 256<<20 {
		_ = c.conn.SetWriteDeadline(time.Now().Add(300 * time.Millisecond))
		n, err := c.conn.Write(frame)
		total += n
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return total, len(frame)
			}
			t.Fatalf("write: %v", err)
		}
	}
	t.Fatalf("wrote %d bytes without blocking", total)
	return total, len(frame)
}

func TestStallModeReadsNothing(t *testing.T) {
	const readBuf = 4096
	srv, addr := startBackend(t, Config{
		SlowSink: SlowSinkStall,
		Reactor:  reactor.Config{ReadBufferCap: readBuf, Loops: 1},
	})
	c := login1710(t, addr, "Staller")
	written, _ := fillUntilBlocked(t, c)
	in, out, err := srv.Buffered()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("client wrote %d bytes; backend holds %d in, %d out", written, in, out)
	// Nothing was read after play began except what one read took in
	// before the pause (bounded by the reactor's inbound cap).
	if in > 5*readBuf || out != 0 {
		t.Fatalf("backend holds %d bytes of input and %d of output, want at most %d and 0", in, out, 5*readBuf)
	}
	if written < 4*in {
		t.Fatalf("client wrote only %d bytes: the kernel buffers should hold most of it", written)
	}
	st := srv.Stats()
	mustEqual(t, "echo frames", st.EchoFrames, 0)
	mustEqual(t, "stalled", st.Stalled, 1)
}

func TestBackpressureWhenClientDoesNotRead(t *testing.T) {
	const readBuf, high = 4096, 64 << 10
	srv, addr := startBackend(t, Config{
		Reactor: reactor.Config{ReadBufferCap: readBuf, HighWatermark: high, LowWatermark: high / 2, Loops: 1},
	})
	c := login1710(t, addr, "Reader")
	written, frameLen := fillUntilBlocked(t, c)
	in, out, err := srv.Buffered()
	if err != nil {
		t.Fatal(err)
	}
	st := srv.Stats()
	t.Logf("client wrote %d bytes; backend echoed %d, holds %d in, %d out", written, st.EchoBytes, in, out)
	if out > high+2*readBuf || in > 5*readBuf {
		t.Fatalf("backend holds %d bytes of output and %d of input; want at most %d and %d",
			out, in, high+2*readBuf, 5*readBuf)
	}
	if st.Reactor.PauseEvents == 0 {
		t.Fatal("the connection was never paused")
	}
	// Once the client reads, every whole frame it wrote comes back.
	_ = c.conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.CopyN(io.Discard, c.r, int64(written/frameLen*frameLen)); err != nil {
		t.Fatalf("reading the echo back: %v", err)
	}
}

func TestSlowSinkKeepsToItsRate(t *testing.T) {
	const rate = 64 << 10
	srv, addr := startBackend(t, Config{SlowSink: SlowSinkSlow, SlowRate: rate})
	c := login1710(t, addr, "Slowpoke")
	var sent []byte
	for i := range 48 {
		sent = append(sent, c.frame(0x03, playPacket(uint32(i), 1020))...)
	}
	start := time.Now()
	go func() { _, _ = c.conn.Write(sent) }() // the backend reads slowly: do not block the reader
	got := make([]byte, len(sent))
	if _, err := io.ReadFull(c.r, got); err != nil {
		t.Fatalf("read echo: %v", err)
	}
	elapsed := time.Since(start)
	if !bytes.Equal(got, sent) {
		t.Fatal("echo differs")
	}
	// 48 KiB at 64 KiB/s, less the 50 ms burst and the last frame, which
	// is paid for after it is read: at least 0.68 s, less 50 ms for the lag
	// of the loop clock (one tick, more on a loaded machine) at the first
	// read. Unlimited, the echo takes a few milliseconds.
	frameLen := len(sent) / 48
	minimum := time.Duration(float64(len(sent)-rate*int(slowBurst)/int(time.Second)-frameLen)/rate*float64(time.Second)) -
		50*time.Millisecond
	if elapsed < minimum {
		t.Fatalf("echoed %d bytes in %v at %d B/s: faster than the rate allows (%v)", len(sent), elapsed, rate, minimum)
	}
	if srv.Stats().SlowPauses == 0 {
		t.Fatal("slow-sink mode never paused")
	}
	t.Logf("echoed %d bytes in %v (minimum %v), %d pauses", len(sent), elapsed, minimum, srv.Stats().SlowPauses)
}

func TestConfigValidation(t *testing.T) {
	base := reactor.Config{Addrs: []string{"127.0.0.1:0"}}
	for _, cfg := range []Config{
		{Reactor: base, Compression: true, CompressionThreshold: -1},
		{Reactor: base, SlowRate: -1},
		{Reactor: base, SlowSink: 9},
		{Reactor: base, MaxFrameLength: mc.MaxFrameLength + 1},
		{Reactor: base, MaxLoginFrameLength: -1},
		{Reactor: base, LoginTimeout: -time.Second},
		{Reactor: base, ReplyDelay: -time.Millisecond},
		{Reactor: base, ReplyDelay: time.Millisecond, SlowSink: SlowSinkSlow},
		{Reactor: reactor.Config{}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted a bad config", cfg)
		}
	}
	srv, err := New(Config{Reactor: base})
	if err != nil {
		t.Fatal(err)
	}
	got := srv.Config()
	if got.LoginTimeout != DefaultLoginTimeout || got.SlowRate != DefaultSlowRate ||
		got.MaxFrameLength != DefaultMaxFrameLength || got.MaxLoginFrameLength != DefaultMaxLoginFrameLength ||
		got.Reactor.ReadBufferCap != reactor.DefaultReadBufferCap {
		t.Fatalf("defaults not filled in: %+v", got)
	}
}
