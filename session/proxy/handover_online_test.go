package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/sessionserver"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/reactor/handoverwire"
	"github.com/tidegate/tidegate/session/mcbackend"
	"github.com/tidegate/tidegate/session/proxy/handover"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
)

// handOverV2 is handOver with state message version 2, as the lifecycle
// runs it against a new process of this build; adoptWith, when set, is the
// new process (takeOverEdited's seam), TakeOver otherwise.
func handOverV2(t *testing.T, from, to *Proxy, edit func(*handover.State, []*os.File)) int {
	t.Helper()
	send, recv := handoverPair(t)
	took := make(chan int, 1)
	go func() {
		var n int
		var err error
		if edit == nil {
			n, err = to.TakeOver(recv)
		} else {
			n, err = takeOverEdited(to, recv, edit)
		}
		if err != nil {
			t.Errorf("TakeOver: %v", err)
		}
		recv.Close()
		took <- n
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := from.HandOver(ctx, send, HandOverOptions{Stall: 15 * time.Second, Acked: true, AckEach: true, StateVersion: handover.StateVersion})
	send.Close()
	if err != nil {
		t.Fatalf("HandOver: %v", err)
	}
	if got := <-took; got != n {
		t.Fatalf("handed over %d sessions, taken over %d", n, got)
	}
	return n
}

// takeOverEdited is TakeOver, one session at a time, with a seam: each
// session's state is decoded, given to edit with the client's socket,
// encoded again and adopted into p.
func takeOverEdited(p *Proxy, recv *handoverwire.Conn, edit func(*handover.State, []*os.File)) (int, error) {
	acker := handover.NewAcker(recv)
	n := 0
	for place := int64(0); ; place++ {
		data, files, err := recv.Recv()
		if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
			return n, nil
		} else if err != nil {
			return n, err
		}
		st, err := handover.Decode(data)
		if err != nil {
			return n, err
		}
		edit(&st, files)
		if data, err = handover.Encode(&st, handover.StateV2); err != nil {
			return n, err
		}
		if err := p.adopt(data, files, func() { acker.Ack(place, true) }, false); err != nil {
			acker.Ack(place, false)
			return n, err
		}
		n++
	}
}

// readSocket reads from the socket f, which is left open: exactly n bytes,
// or with n < 0 what one read gives.
func readSocket(t *testing.T, f *os.File, n int) []byte {
	c, err := net.FileConn(f)
	if err != nil {
		t.Error(err)
		return nil
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	if n < 0 {
		buf := make([]byte, 64<<10)
		k, err := c.Read(buf)
		if err != nil {
			t.Errorf("reading what the backend sent: %v", err)
		}
		return buf[:k]
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Errorf("reading %d bytes the client sent after the detach: %v", n, err)
	}
	return buf
}

// readFrame reads one uncompressed frame of at most 2 MiB.
func readFrame(r io.Reader) (int32, []byte, error) {
	var hdr []byte
	for len(hdr) < 5 {
		var b [1]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return 0, nil, fmt.Errorf("frame length: %w", err)
		}
		if hdr = append(hdr, b[0]); b[0]&0x80 == 0 {
			break
		}
	}
	n, _, err := mc.ReadVarInt(hdr)
	if err != nil || n < 1 || n > 2<<20 {
		return 0, nil, fmt.Errorf("frame length %d (%v)", n, err)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, fmt.Errorf("frame of %d bytes: %w", n, err)
	}
	id, data, err := mc.ParsePacketID(body)
	return id, data, err
}

// shiftRegister is the register of a stream one byte further on than r,
// that byte being x: a cipher state off by one byte.
func shiftRegister(r [16]byte, x byte) [16]byte {
	var out [16]byte
	copy(out[:], r[1:])
	out[15] = x
	return out
}

// TestHandOverOnlineSessionAtTheByteBoundary: an online (encrypted) 1.7.10
// session is handed over with bytes on both sides of the boundary: chunk
// replies of 12 MiB the client does not read yet (queued toward it,
// encrypted: ToClient), and echo frames it sends after the old process
// detached it, which the seam reads off the socket into ClientIn (what a
// process had read but not relayed), as it reads the backend's next bytes
// into BackendIn. Everything arrives once, in order
// and decrypted, and play goes on after. The same run with either CFB8
// register off by one byte breaks the stream: the test cannot pass with
// the cipher state at the wrong position.
func TestHandOverOnlineSessionAtTheByteBoundary(t *testing.T) {
	for _, tc := range []struct {
		name    string
		corrupt func(*handover.Cipher)
	}{
		{"exact", nil},
		{"encrypt register one byte on", func(c *handover.Cipher) { c.Encrypt = shiftRegister(c.Encrypt, 0x5a) }},
		{"decrypt register one byte on", func(c *handover.Cipher) { c.Decrypt = shiftRegister(c.Decrypt, 0x5a) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := onlineBoundaryRun(t, tc.corrupt)
			if tc.corrupt == nil && err != nil {
				t.Fatal(err)
			}
			if tc.corrupt != nil && err == nil {
				t.Fatal("the session survived a cipher state off by one byte: the test does not see the position")
			}
		})
	}
}

func onlineBoundaryRun(t *testing.T, breakCipher func(*handover.Cipher)) error {
	checkNoLeaks(t)
	ss := sessionserver.Start(t)
	ss.AddPlayer(alice)
	_, be := startBackendServer(t, mcbackend.Config{Forwarding: mcbackend.ForwardBungeeCord, ChunkReplies: true})
	cfg := onlineConfig(t, be, "bungeecord", ss.URL, 5*time.Second, 5*time.Second)
	oldP, addr := startProxy(t, cfg)
	newP, _ := startProxy(t, cfg)
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	raw, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = raw.Close() })
	_ = raw.SetDeadline(time.Now().Add(60 * time.Second))
	c := onlineLogin17(t, raw, ss)
	echo(t, c, []byte("before"))

	const replies, replySize = 12, mcbackend.MaxChunkReply // past the kernel's buffers: some waits in the proxy
	var reqs []byte
	var want [][]byte // the frames the client should read, bodies
	for i := range replies {
		body := mcbackend.AppendChunkRequest(nil, replySize)
		body = append(body, byte(i))
		reqs = mc.AppendPacket(reqs, int32(body[0]), body[1:])
		want = append(want, mcbackend.AppendChunkFiller(body, len(body), replySize))
	}
	before := oldP.Stats().FramesC2S
	if _, err := c.Write(reqs); err != nil {
		t.Fatal(err)
	}
	waitStats(t, oldP, "the chunk requests relayed and replies queued", func(st proxymetrics.Stats) bool {
		return st.FramesC2S == before+replies && st.Reactor.Paused >= 1 // the backend, for the client's queue
	})
	var during []byte
	for i := range 10 {
		data := []byte(fmt.Sprintf("during the hand-over %d", i))
		during = mc.AppendPacket(during, 0x03, data)
		want = append(want, append([]byte{0x03}, data...))
	}
	var sawQueued bool
	n := handOverV2(t, oldP, newP, func(st *handover.State, files []*os.File) {
		sawQueued = len(st.ToClient) > 0
		if st.Cipher == nil || st.Login == nil || st.Login.Name != alice.Name {
			t.Errorf("state without the online login: cipher %v, login %+v", st.Cipher != nil, st.Login)
			return
		}
		// Detached: the client's next bytes wait in its socket.
		if _, err := c.Write(during); err != nil {
			t.Error(err)
		}
		st.ClientIn = append(st.ClientIn, readSocket(t, files[0], len(during))...)
		// And the backend's next replies, in the clear, as read and not
		// yet relayed (BackendIn).
		st.BackendIn = append(st.BackendIn, readSocket(t, files[1], -1)...)
		if breakCipher != nil {
			breakCipher(st.Cipher)
		}
	})
	if n != 1 {
		t.Fatalf("handed over %d sessions, want 1", n)
	}
	if !sawQueued {
		t.Fatal("nothing was queued toward the client at the hand-over: the test does not reach the boundary")
	}
	if breakCipher != nil {
		_ = raw.SetDeadline(time.Now().Add(5 * time.Second))
	}
	for i, w := range want {
		id, data, err := readFrame(c)
		if err != nil {
			return fmt.Errorf("frame %d of %d: %w", i, len(want), err)
		}
		if got := append(mc.AppendVarInt(nil, id), data...); !bytes.Equal(got, w) {
			return fmt.Errorf("frame %d of %d: %d bytes differ from the %d sent", i, len(want), len(got), len(w))
		}
	}
	for i := range 10 {
		echo(t, c, []byte(strings.Repeat("after ", i+1)))
	}
	if st := newP.Stats(); st.Active != 1 || oldP.Stats().Active != 0 {
		t.Fatalf("sessions: %d on the new proxy, %d on the old; want 1, 0", st.Active, oldP.Stats().Active)
	}
	_ = raw.Close()
	waitStats(t, newP, "the session to end", func(st proxymetrics.Stats) bool { return st.Active == 0 })
	return nil
}
