package reactor

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/reactor/handoverwire"
)

// recordingEcho is echoHandler that records the error each close reports.
type recordingEcho struct {
	echoHandler
	handedOver atomic.Int32
}

func (h *recordingEcho) OnClose(c *Conn, err error) {
	if errors.Is(err, ErrHandedOver) {
		h.handedOver.Add(1)
	}
	h.echoHandler.OnClose(c, err)
}

// TestDetachAndAdoptMoveAConnection: a connection detached from one server,
// passed over a Unix socket with handoverwire and adopted by another, goes
// on there: the client sees no end, bytes it sent while nobody read it
// arrive, and the first server's handler hears ErrHandedOver.
func TestDetachAndAdoptMoveAConnection(t *testing.T) {
	oldH, newH := &recordingEcho{}, &echoHandler{}
	oldS, addr := startServer(t, Config{Addrs: []string{"tcp://127.0.0.1:0"}, Loops: 1}, oldH)
	newS, _ := startServer(t, Config{Addrs: []string{"tcp://127.0.0.1:0"}, Loops: 1}, newH)
	c := dial(t, addr)
	if err := echoOnce(c, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	send, recv := handoverPair(t)

	// Pause it, let the client send meanwhile, then detach.
	paused := make(chan struct{})
	_ = oldS.Loops()[0].Execute(func() {
		oldH.mu.Lock()
		oldH.conns[0].PauseRead()
		oldH.mu.Unlock()
		close(paused)
	})
	<-paused
	if _, err := c.Write([]byte("sent while paused")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // into the kernel's buffer (or gnet's)
	errc := make(chan error, 1)
	_ = oldS.Loops()[0].Execute(func() {
		oldH.mu.Lock()
		conn := oldH.conns[0]
		oldH.mu.Unlock()
		d, err := conn.Detach()
		if err != nil {
			errc <- err
			return
		}
		go func() {
			defer d.File.Close()
			errc <- send.Send(d.Unread, d.File)
		}()
	})
	if err := <-errc; err != nil {
		t.Fatalf("detach and send: %v", err)
	}
	rest, files, err := recv.Recv()
	if err != nil || len(files) != 1 {
		t.Fatalf("recv: %d files, %v", len(files), err)
	}
	nc, err := net.FileConn(files[0])
	files[0].Close()
	if err != nil {
		t.Fatal(err)
	}
	adopted, err := newS.Adopt(nc, newH, nil, 0)
	nc.Close()
	if err != nil {
		t.Fatalf("adopt: %v", err)
	}
	if len(rest) > 0 { // what the old server had read but not handled
		done := make(chan struct{})
		_ = adopted.Loop().Execute(func() { _ = adopted.Write(rest); close(done) })
		<-done
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, len("sent while paused"))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "sent while paused" {
		t.Fatalf("after the handover: %q, %v", got, err)
	}
	if err := echoOnce(c, 5*time.Second); err != nil {
		t.Fatalf("echo on the new server: %v", err)
	}
	waitfor.For(t, "the old server to hand the connection over", func() bool { return oldH.handedOver.Load() == 1 })
	if st := newS.Stats(); st.Accepted != 1 || st.Active != 1 {
		t.Fatalf("new server: accepted %d active %d, want 1 and 1", st.Accepted, st.Active)
	}
}

// TestSendingAListenerKeepsItNonBlocking: passing a listener's descriptor
// must not put the shared socket in blocking mode (os.File.Fd would): a
// blocking listener hangs its accept goroutine and any close waiting on it.
func TestSendingAListenerKeepsItNonBlocking(t *testing.T) {
	s, _ := startServer(t, Config{Addrs: []string{"tcp://127.0.0.1:0"}, Loops: 1}, &echoHandler{})
	files, err := s.ListenerFiles()
	if err != nil || len(files) != 1 {
		t.Fatalf("ListenerFiles: %d files, %v", len(files), err)
	}
	send, recv := handoverPair(t)
	go func() {
		if _, fs, err := recv.Recv(); err == nil {
			for _, f := range fs {
				f.Close()
			}
		}
	}()
	if err := send.Send([]byte("listeners"), files[0]); err != nil {
		t.Fatal(err)
	}
	rc, err := s.accept.List()[0].Net().(*net.TCPListener).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags int
	_ = rc.Control(func(fd uintptr) { flags, _ = unix.FcntlInt(fd, unix.F_GETFL, 0) })
	files[0].Close()
	if flags&unix.O_NONBLOCK == 0 {
		t.Fatal("the listener is in blocking mode after its descriptor was sent")
	}
}

// TestHoldAccepting: a held server leaves new connections in the backlog
// (another process would take them), takes them again once resumed, and
// ReleaseListeners gives the backlog to whoever holds the socket too
// instead of accepting it on the way out.
func TestHoldAccepting(t *testing.T) {
	s, addr := startServer(t, Config{Addrs: []string{"tcp://127.0.0.1:0"}, Loops: 1}, &echoHandler{})
	s.HoldAccepting()
	c := dial(t, addr) // completes in the kernel's backlog
	time.Sleep(200 * time.Millisecond)
	if n := s.Stats().Accepted; n != 0 {
		t.Fatalf("held server accepted %d connections", n)
	}
	s.ResumeAccepting()
	if err := echoOnce(c, 5*time.Second); err != nil {
		t.Fatalf("after ResumeAccepting: %v", err)
	}

	files, err := s.ListenerFiles() // the other process's copy
	if err != nil || len(files) != 1 {
		t.Fatalf("ListenerFiles: %d, %v", len(files), err)
	}
	other, err := net.FileListener(files[0])
	files[0].Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	s.HoldAccepting()
	c2 := dial(t, addr)
	s.ReleaseListeners()
	if n := s.Stats().Accepted; n != 1 {
		t.Fatalf("releasing server accepted %d connections in all, want the 1 from before", n)
	}
	_ = other.(*net.TCPListener).SetDeadline(time.Now().Add(5 * time.Second))
	got, err := other.Accept()
	if err != nil {
		t.Fatalf("the backlog did not stay for the other listener: %v", err)
	}
	got.Close()
	c2.Close()
	if h := s.Health(); !h.Draining {
		t.Fatal("a server that released its listeners does not report draining")
	}
}

// handoverPair returns the two ends of a hand-over socket, closed when the
// test ends.
func handoverPair(t *testing.T) (send, recv *handoverwire.Conn) {
	t.Helper()
	send, other, err := handoverwire.NewPair()
	if err != nil {
		t.Fatal(err)
	}
	recv, err = handoverwire.FromFile(other)
	other.Close()
	if err != nil {
		send.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { send.Close(); recv.Close() })
	return send, recv
}
