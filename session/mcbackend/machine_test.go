package mcbackend

import (
	"bytes"
	"compress/zlib"
	"errors"
	"strings"
	"testing"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/reactor/writev"
)

// driver runs a machine over a byte stream the way the server's handler
// does, without a socket: input accumulates in buf, consumed bytes are
// dropped, and everything the machine emits is collected in sent.
type driver struct {
	m    machine
	buf  []byte
	out  writev.Batch
	sent []byte
	err  error
	echo int // play bytes echoed
}

// sharedCodec is reused by the drivers, as a loop's codec is by its
// connections; zlib's writer is expensive to allocate.
var sharedCodec codec

func newDriver(threshold int) *driver {
	cfg := &machineConfig{
		threshold:    threshold,
		maxFrame:     mc.MaxFrameLength,
		maxLoginSize: DefaultMaxLoginFrameLength,
		online:       func() int64 { return 7 },
		statusEnd:    statusJSONEnd(DefaultStatusDescription),
	}
	return &driver{m: newMachine(cfg, &sharedCodec, &loopCounters{})}
}

func (d *driver) feed(p []byte) {
	if d.err != nil || d.m.phase == phaseDone {
		return
	}
	d.buf = append(d.buf, p...)
	if d.m.need > 0 && len(d.buf) < d.m.need {
		return
	}
	consumed := 0
	var err error
	if d.m.phase < phasePlay {
		consumed, err = d.m.advance(d.buf, &d.out)
	}
	// As OnTraffic: echo returns after each chunk reply; the driver never pauses.
	for err == nil && d.m.phase == phasePlay && consumed < len(d.buf) {
		var n int
		n, _, err = d.m.echo(d.buf[consumed:], int(^uint(0)>>1), &d.out)
		consumed += n
		d.echo += n
		if n == 0 {
			break
		}
	}
	if consumed > len(d.buf) {
		panic("consumed more than buffered")
	}
	for _, b := range d.out.Bytes() {
		d.sent = append(d.sent, b...)
	}
	d.out.Reset()
	d.buf = append(d.buf[:0], d.buf[consumed:]...)
	d.err = err
}

// session1710 is a 1.7.10 Forge client's login followed by play frames.
func session1710() (stream, play []byte) {
	stream = handshake(mc.Protocol1_7_10, "mc.example\x00FML\x00", mc.NextStateLogin)
	stream = mc.AppendPacket(stream, 0, loginStartData(mc.Protocol1_7_10, "Steve"))
	for i, n := range []int{0, 3, 200} {
		play = mc.AppendPacket(play, 0x03, playPacket(uint32(i), n))
	}
	play = append(play, 0) // an empty frame
	return append(stream, play...), play
}

// session764 is a 1.20.2 client's login, configuration and play frames in
// the given framing.
func session764(threshold int) (stream, play []byte) {
	stream = handshake(mc.Protocol1_20_2, "localhost", mc.NextStateLogin)
	stream = mc.AppendPacket(stream, 0, loginStartData(mc.Protocol1_20_2, "Alex"))
	stream = append(stream, encodeFrame([]byte{packetLoginAcknowledged}, threshold)...)
	stream = append(stream, encodeFrame([]byte{0x00, 'e', 'n'}, threshold)...) // client information
	stream = append(stream, encodeFrame([]byte{0x02}, threshold)...)           // finish configuration ack
	for i, n := range []int{1, 100, 300} {
		play = append(play, encodeFrame(append([]byte{0x03}, playPacket(uint32(i), n)...), threshold)...)
	}
	return append(stream, play...), play
}

// TestMachineSplitAtEveryByte feeds whole sessions in two parts split at
// every byte and checks that the output does not depend on the split.
func TestMachineSplitAtEveryByte(t *testing.T) {
	for _, tc := range []struct {
		name      string
		threshold int
		session   func() ([]byte, []byte)
	}{
		{"1.7.10", -1, session1710},
		{"1.20.2", -1, func() ([]byte, []byte) { return session764(-1) }},
		{"1.20.2/threshold-64", 64, func() ([]byte, []byte) { return session764(64) }},
		{"1.20.2/threshold-0", 0, func() ([]byte, []byte) { return session764(0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stream, play := tc.session()
			whole := newDriver(tc.threshold)
			whole.feed(stream)
			if whole.err != nil || whole.m.phase != phasePlay || !bytes.HasSuffix(whole.sent, play) ||
				whole.echo != len(play) {
				t.Fatalf("whole stream: err %v, phase %s, echoed %d of %d", whole.err, whole.m.phase, whole.echo, len(play))
			}
			for split := 1; split < len(stream); split++ {
				d := newDriver(tc.threshold)
				d.feed(stream[:split])
				d.feed(stream[split:])
				if d.err != nil || !bytes.Equal(d.sent, whole.sent) {
					t.Fatalf("split at %d: err %v, output differs (%d vs %d bytes)", split, d.err, len(d.sent), len(whole.sent))
				}
			}
			// Byte by byte.
			d := newDriver(tc.threshold)
			for i := range stream {
				d.feed(stream[i : i+1])
			}
			if d.err != nil || !bytes.Equal(d.sent, whole.sent) {
				t.Fatalf("byte by byte: err %v, output differs", d.err)
			}
		})
	}
}

func TestMachineRejects(t *testing.T) {
	login764 := append(handshake(764, "h", 2), mc.AppendPacket(nil, 0, loginStartData(764, "a"))...)
	for _, tc := range []struct {
		name      string
		threshold int
		input     []byte
		want      Reason
	}{
		{"legacy ping", -1, []byte{0xFE, 0x01}, ReasonLegacyPing},
		{"handshake id 1", -1, mc.AppendPacket(nil, 1, nil), ReasonBadHandshake},
		{"handshake with trailing byte", -1, rawFrame(append(handshake(5, "h", 1)[1:], 0)), ReasonBadHandshake},
		{"frame too large for login", -1, mc.AppendVarInt(nil, DefaultMaxLoginFrameLength+1), ReasonBadFrame},
		{"empty login start", -1, append(handshake(5, "h", 2), mc.AppendPacket(nil, 0, nil)...), ReasonBadLoginStart},
		{"login start id 1", -1, append(handshake(5, "h", 2), mc.AppendPacket(nil, 1, nil)...), ReasonBadLoginStart},
		{"ping with 9 bytes", -1, append(handshake(5, "h", 1), mc.AppendPacket(nil, 1, make([]byte, 9))...), ReasonBadStatus},
		{"status request with data", -1, append(handshake(5, "h", 1), mc.AppendPacket(nil, 0, []byte{1})...), ReasonBadStatus},
		{"status id varint too long", -1, append(handshake(5, "h", 1), 5, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF), ReasonBadStatus},
		{"packet before login acknowledged", -1, append(login764, mc.AppendPacket(nil, 0x01, nil)...), ReasonUnexpectedPacket},
		{"compressed header missing", 64, append(login764, 0x01, 0x80), ReasonBadCompression},
		{"declared size above 8 MiB", 64, append(login764, 0x05, 0x80, 0x80, 0x80, 0x08, 0x00), ReasonBadCompression},
		{"declared size above the login limit", 64, append(login764, 0x04, 0x80, 0x80, 0x04, 0x00), ReasonBadCompression},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDriver(tc.threshold)
			d.feed(tc.input)
			if d.err == nil {
				t.Fatalf("accepted; phase %s", d.m.phase)
			}
			if got := reasonOf(d.err); got != tc.want {
				t.Fatalf("reason %s (%v), want %s", got, d.err, tc.want)
			}
		})
	}
}

// rawFrame prefixes body (packet ID and data) with its length.
func rawFrame(body []byte) []byte { return append(mc.AppendVarInt(nil, int32(len(body))), body...) }

func TestStatusAnswer(t *testing.T) {
	d := newDriver(-1)
	d.feed(append(handshake(340, "h", 1), mc.AppendPacket(nil, 0, nil)...))
	want := mc.AppendStatusResponse(nil, []byte(`{"version":{"name":"tidegate-backend","protocol":340},`+
		`"players":{"max":100,"online":7},"description":{"text":"tidegate fake backend"}}`))
	if !bytes.Equal(d.sent, want) {
		t.Fatalf("status response\n got %q\nwant %q", d.sent, want)
	}
	d.sent = nil
	d.feed(mc.AppendPacket(nil, 1, []byte{0, 0, 0, 0, 0, 0, 0, 42}))
	if !bytes.Equal(d.sent, mc.AppendPong(nil, 42)) || d.m.phase != phaseDone {
		t.Fatalf("pong %x, phase %s", d.sent, d.m.phase)
	}
	d.feed([]byte("more input is ignored once done"))
	if d.err != nil {
		t.Fatal(d.err)
	}
}

func TestAppendLoginSuccess(t *testing.T) {
	name := []byte("Notch")
	u := mc.OfflineUUID(name)
	dashed := mc.AppendString(nil, mc.AppendUUID(nil, u, true))
	plain := mc.AppendString(nil, mc.AppendUUID(nil, u, false))
	str := mc.AppendString(nil, name)
	cat := func(parts ...[]byte) []byte { return bytes.Join(append([][]byte{{0x02}}, parts...), nil) }
	for _, tc := range []struct {
		version int32
		want    []byte
	}{
		{4, cat(plain, str)},
		{5, cat(dashed, str)},
		{47, cat(dashed, str)},
		{734, cat(dashed, str)},
		{735, cat(u[:], str)},
		{758, cat(u[:], str)},
		{759, cat(u[:], str, []byte{0})},
		{764, cat(u[:], str, []byte{0})},
		{765, cat(u[:], str, []byte{0})},
		{766, cat(u[:], str, []byte{0, 0})},
		{767, cat(u[:], str, []byte{0, 0})},
		{768, cat(u[:], str, []byte{0})},
		{774, cat(u[:], str, []byte{0})},
	} {
		if got := appendLoginSuccess(nil, tc.version, name); !bytes.Equal(got, tc.want) {
			t.Errorf("protocol %d: %x, want %x", tc.version, got, tc.want)
		}
	}
}

func TestCodecFrames(t *testing.T) {
	var k codec
	body := append([]byte{0x03}, bytes.Repeat([]byte("abc"), 100)...)
	for _, threshold := range []int{-1, 0, 64, 301, 302} {
		frame := k.appendFrame(nil, body, threshold)
		if (threshold < 0 || len(body) < threshold) && !bytes.Equal(frame, encodeFrame(body, threshold)) {
			t.Fatalf("threshold %d: uncompressed frame %x differs", threshold, frame)
		}
		n, hn, err := mc.SplitFrame(frame, 0)
		if err != nil || n != len(frame) {
			t.Fatalf("threshold %d: frame of %d bytes splits as %d, %v", threshold, len(frame), n, err)
		}
		if threshold < 0 {
			continue
		}
		got, err := k.decodeFrame(frame[hn:], threshold, 1<<20)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("threshold %d: round trip gave %d bytes, %v", threshold, len(got), err)
		}
		compressed := frame[hn] != 0
		if compressed != (len(body) >= threshold) {
			t.Fatalf("threshold %d: compressed %t for %d bytes", threshold, compressed, len(body))
		}
	}
}

func TestCodecRejects(t *testing.T) {
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	_, _ = zw.Write(make([]byte, 1000))
	_ = zw.Close()
	deflated := z.Bytes()
	header := func(n int32) []byte { return mc.AppendVarInt(nil, n) }
	for _, tc := range []struct {
		name string
		body []byte
		want string
	}{
		{"inflates past its declared size", append(header(100), deflated...), "inflated size 101 exceeds maximum 100"},
		{"inflates short of its declared size", append(header(2000), deflated...), "inflated size 1000 is below minimum 2000"},
		{"truncated stream", append(header(1000), deflated[:len(deflated)/2]...), "invalid zlib stream of a packet of 1000"},
		{"not zlib", append(header(1000), 1, 2, 3, 4), "invalid zlib header of a packet of 1000"},
		{"below threshold", append(header(10), deflated...), "data length 10 is below minimum 64"},
		{"above the limit", append(header(4096), deflated...), "data length 4096 exceeds maximum 2048"},
		{"negative size", append(header(-1), deflated...), "data length -1 is below minimum 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var k codec
			_, err := k.decodeFrame(tc.body, 64, 2048)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestParseByteSize(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "65536": 65536, "64KiB": 64 << 10, "64k": 64 << 10, "64 KB": 64 << 10,
		"1MiB": 1 << 20, "2m": 2 << 20, "1GiB": 1 << 30, "512B": 512,
	} {
		if got, err := ParseByteSize(in); err != nil || got != want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "KiB", "-1", "1.5MiB", "64 bits", "99999999999GiB"} {
		if _, err := ParseByteSize(in); err == nil {
			t.Errorf("ParseByteSize(%q) accepted", in)
		}
	}
}

func TestParseSlowSinkMode(t *testing.T) {
	for in, want := range map[string]SlowSinkMode{"none": SlowSinkNone, "": SlowSinkNone, "SLOW": SlowSinkSlow, "stall": SlowSinkStall} {
		if got, err := ParseSlowSinkMode(in); err != nil || got != want {
			t.Errorf("ParseSlowSinkMode(%q) = %v, %v", in, got, err)
		}
		if want.String() == "" {
			t.Errorf("%d has no name", want)
		}
	}
	if _, err := ParseSlowSinkMode("fast"); err == nil {
		t.Error("accepted fast")
	}
}

func TestReasonNames(t *testing.T) {
	seen := map[string]bool{}
	for r := range numReasons {
		name := r.String()
		if name == "" || seen[name] || strings.ContainsAny(name, " ()") {
			t.Errorf("reason %d has name %q", r, name)
		}
		seen[name] = true
	}
	if reasonOf(errors.New("x")) != ReasonUnexpectedPacket {
		t.Error("reasonOf a foreign error")
	}
}
