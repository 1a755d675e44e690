package mcbackend

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/protocol/mc"
)

// startBackend starts a backend on an ephemeral loopback port and stops it
// when the test ends. cfg.Reactor.Addrs and Logger are filled in.
func startBackend(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	cfg.Reactor.Addrs = []string{"tcp://127.0.0.1:0"}
	if cfg.Reactor.Loops == 0 {
		cfg.Reactor.Loops = 2
	}
	cfg.Reactor.Logger = zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	srv, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := srv.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	addr, err := srv.Addr(0)
	if err != nil {
		t.Fatalf("Addr: %v", err)
	}
	return srv, addr.String()
}

// testClient is a minimal blocking Minecraft client for the tests.
type testClient struct {
	t         *testing.T
	conn      net.Conn
	r         *bufio.Reader
	threshold int // compressed framing when >= 0
}

func dialClient(t *testing.T, addr string) *testClient {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	return &testClient{t: t, conn: conn, r: bufio.NewReader(conn), threshold: -1}
}

func (c *testClient) write(b []byte) {
	c.t.Helper()
	if _, err := c.conn.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// frame returns packet id and data as a frame in the client's framing.
func (c *testClient) frame(id int32, data []byte) []byte {
	body := append(mc.AppendVarInt(nil, id), data...)
	return encodeFrame(body, c.threshold)
}

func (c *testClient) send(id int32, data []byte) { c.t.Helper(); c.write(c.frame(id, data)) }

// encodeFrame frames body independently of the backend's codec.
func encodeFrame(body []byte, threshold int) []byte {
	if threshold < 0 {
		return append(mc.AppendVarInt(nil, int32(len(body))), body...)
	}
	if len(body) < threshold {
		out := mc.AppendVarInt(nil, int32(len(body)+1))
		out = append(out, 0)
		return append(out, body...)
	}
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	_, _ = zw.Write(body)
	_ = zw.Close()
	inner := append(mc.AppendVarInt(nil, int32(len(body))), z.Bytes()...)
	return append(mc.AppendVarInt(nil, int32(len(inner))), inner...)
}

// readFrame reads one whole frame as raw bytes.
func (c *testClient) readFrame() ([]byte, error) {
	var hdr []byte
	for {
		b, err := c.r.ReadByte()
		if err != nil {
			return nil, err
		}
		hdr = append(hdr, b)
		if b&0x80 == 0 {
			break
		}
		if len(hdr) > 3 {
			return nil, errors.New("frame length too long")
		}
	}
	n, _, err := mc.ReadVarInt(hdr)
	if err != nil {
		return nil, err
	}
	frame := make([]byte, len(hdr)+int(n))
	copy(frame, hdr)
	if _, err := io.ReadFull(c.r, frame[len(hdr):]); err != nil {
		return nil, err
	}
	return frame, nil
}

// recv reads one packet, inflating it in the compressed framing.
func (c *testClient) recv() (id int32, data []byte) {
	c.t.Helper()
	frame, err := c.readFrame()
	if err != nil {
		c.t.Fatalf("read frame: %v", err)
	}
	_, hn, _ := mc.ReadVarInt(frame)
	body := frame[hn:]
	if c.threshold >= 0 {
		dl, n, err := mc.ParseCompressedHeader(body)
		if err != nil {
			c.t.Fatalf("compressed header: %v", err)
		}
		body = body[n:]
		if dl != 0 {
			if int(dl) < c.threshold {
				c.t.Fatalf("compressed packet of %d bytes below threshold %d", dl, c.threshold)
			}
			zr, err := zlib.NewReader(bytes.NewReader(body))
			if err != nil {
				c.t.Fatalf("zlib: %v", err)
			}
			body, err = io.ReadAll(zr)
			if err != nil || len(body) != int(dl) {
				c.t.Fatalf("inflate: %d bytes, err %v; declared %d", len(body), err, dl)
			}
		} else if c.threshold > 0 && len(body) >= c.threshold {
			c.t.Fatalf("uncompressed packet of %d bytes at threshold %d", len(body), c.threshold)
		}
	}
	id, data, err = mc.ParsePacketID(body)
	if err != nil {
		c.t.Fatalf("packet id: %v", err)
	}
	return id, data
}

// expectClosed waits for the backend to close the connection.
func (c *testClient) expectClosed() {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(c.r)
	if err != nil && !errors.Is(err, net.ErrClosed) && !isReset(err) {
		c.t.Fatalf("waiting for close: %v (read %d bytes)", err, len(b))
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

func handshake(version int32, address string, next int32) []byte {
	return mc.AppendHandshake(nil, mc.Handshake{ProtocolVersion: version, Address: []byte(address), Port: 25565, NextState: next})
}

// loginStart returns Login Start data for version: the name, and from 1.20.2
// the player's UUID.
func loginStartData(version int32, name string) []byte {
	d := mc.AppendString(nil, []byte(name))
	if version >= mc.Protocol1_20_2 {
		u := mc.OfflineUUID([]byte(name))
		d = append(d, u[:]...)
	}
	return d
}

// playFrame returns a play packet 0x03 carrying seq and size bytes of a
// deterministic payload, the way MoonBridge's benchmark echoes.
func playPacket(seq uint32, size int) []byte {
	d := make([]byte, 4+size)
	d[0], d[1], d[2], d[3] = byte(seq>>24), byte(seq>>16), byte(seq>>8), byte(seq)
	for i := range size {
		d[4+i] = byte(int(seq) + i)
	}
	return d
}

func readString(t *testing.T, r *mc.Reader) string {
	t.Helper()
	s, err := r.ReadString(1 << 16)
	if err != nil {
		t.Fatalf("read string: %v", err)
	}
	return string(s)
}

func mustEqual[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}
