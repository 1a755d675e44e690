package reactor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/reactor/acceptor"
	"github.com/tidegate/tidegate/reactor/fdbudget"
)

// childEnv selects a child mode of the test binary (see TestMain).
const childEnv = "TIDEGATE_REACTOR_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "emfile" {
		os.Exit(runEMFILEChild())
	}
	os.Exit(m.Run())
}

// echoOnce writes "ping" on c and waits up to d for it to come back.
func echoOnce(c net.Conn, d time.Duration) error {
	if _, err := c.Write([]byte("ping")); err != nil {
		return err
	}
	return readPing(c, d)
}

func readPing(c net.Conn, d time.Duration) error {
	_ = c.SetReadDeadline(time.Now().Add(d))
	defer c.SetReadDeadline(time.Time{})
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	if string(buf) != "ping" {
		return fmt.Errorf("echo %q, want ping", buf)
	}
	return nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestMaxConnsLeavesConnectionsInBacklog holds MaxConns connections: the
// next one is not accepted (its handshake completes in the kernel, nothing
// reads it) until one of them closes, and then it is served.
func TestMaxConnsLeavesConnectionsInBacklog(t *testing.T) {
	s, addr := startServer(t, Config{MaxConns: 3}, &echoHandler{})
	var held []*net.TCPConn
	for i := 0; i < 3; i++ {
		c := dial(t, addr)
		if err := echoOnce(c, 5*time.Second); err != nil {
			t.Fatalf("held connection %d: %v", i, err)
		}
		held = append(held, c)
	}
	extra := dial(t, addr)
	if _, err := extra.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	// A negative check: a slow machine can only make it pass, not fail.
	if err := readPing(extra, 300*time.Millisecond); !isTimeout(err) {
		t.Fatalf("connection past MaxConns was served (%v); it should wait in the backlog", err)
	}
	waitfor.For(t, "the listener to stop accepting at MaxConns", func() bool {
		return s.Health().Listeners[0].State == acceptor.AtMaxConns.String()
	})
	if h := s.Health(); !h.OK() {
		t.Fatalf("a paused listener must count as alive: %+v", h)
	}
	if st := s.Stats(); st.Accepted != 3 || st.AcceptPauses < 1 {
		t.Fatalf("accepted %d (want 3), accept pauses %d (want >= 1)", st.Accepted, st.AcceptPauses)
	}
	held[0].Close()
	if err := readPing(extra, 5*time.Second); err != nil {
		t.Fatalf("queued connection not served after a slot freed: %v", err)
	}
	for i, c := range held[1:] {
		if err := echoOnce(c, 5*time.Second); err != nil {
			t.Fatalf("held connection %d after the pause: %v", i+1, err)
		}
	}
	if st := s.Stats(); st.Accepted != 4 {
		t.Fatalf("accepted %d, want 4", st.Accepted)
	}
}

// TestMaxConnsThatCannotFitIsRefused: Start refuses a connection limit the
// descriptor limit cannot hold, naming the numbers.
func TestMaxConnsThatCannotFitIsRefused(t *testing.T) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(Config{Addrs: []string{"tcp://127.0.0.1:0"}, Loops: 1, MaxConns: int(rl.Max), FDsPerConn: 2,
		Logger: zerolog.Nop()}, &echoHandler{})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Start()
	var fe *fdbudget.LimitError
	if !errors.As(err, &fe) {
		if err == nil {
			_ = s.Stop(context.Background())
		}
		t.Fatalf("Start: %v, want a *fdbudget.LimitError", err)
	}
	if fe.MaxConns != int(rl.Max) || fe.PerConn != 2 || fe.Limit != uint64(rl.Max) ||
		!strings.Contains(err.Error(), fmt.Sprint(rl.Max)) {
		t.Fatalf("error %q / %+v does not name the numbers", err, fe)
	}
	bound, err := s.Addr(0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := net.DialTimeout("tcp", bound.String(), time.Second); err == nil {
		t.Fatal("the listener stayed open after a refused start")
	}
}

// echoedConns starts an echo server on two loops and opens n connections to
// it, each answered once; the server stops when the test ends, if the test
// has not stopped it.
func echoedConns(t *testing.T, n int) (*Server, string, []*net.TCPConn) {
	t.Helper()
	s, addr := startServer(t, Config{Loops: 2}, &echoHandler{})
	conns := make([]*net.TCPConn, n)
	for i := range conns {
		conns[i] = dial(t, addr)
		if err := echoOnce(conns[i], 5*time.Second); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}
	return s, addr, conns
}

// TestRestartBindsAtOnce stops a server whose connections it closed itself
// (so their ports sit in TIME-WAIT on its side) and binds a new server on the
// same address at once.
func TestRestartBindsAtOnce(t *testing.T) {
	s, a, _ := echoedConns(t, 20)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Stop(ctx); err != nil { // closes the 20 connections first: TIME-WAIT is on this side
		t.Fatal(err)
	}
	start := time.Now()
	s2, err := NewServer(Config{Addrs: []string{"tcp://" + a}, Loops: 1, Logger: zerolog.Nop()}, &echoHandler{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Start(); err != nil {
		t.Fatalf("restart on %s: %v", a, err)
	}
	defer s2.Stop(ctx)
	// Without SO_REUSEADDR the bind fails, or a start that retried it would
	// wait for TIME-WAIT (60 s on Linux); a start takes milliseconds, so 10 s
	// tells them apart on a loaded machine too.
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("restart took %v", el)
	}
	if err := echoOnce(dial(t, a), 5*time.Second); err != nil {
		t.Fatal(err)
	}
}

// emfileReport is what the EMFILE child prints on "stats".
type emfileReport struct {
	Health Health
	Stats  Stats
}

// TestAcceptSurvivesEMFILE runs an echo server in a child process whose
// descriptor table is full, so that accept fails with EMFILE: the engine
// keeps running, the errors are counted, the connections wait in the
// backlog, and they are served once descriptors are free again.
func TestAcceptSurvivesEMFILE(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=emfile")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	addr := strings.TrimSpace(line)
	stats := func() emfileReport {
		t.Helper()
		if _, err := io.WriteString(stdin, "stats\n"); err != nil {
			t.Fatal(err)
		}
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("child stats: %v", err)
		}
		var r emfileReport
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("child stats %q: %v", line, err)
		}
		return r
	}
	var conns []*net.TCPConn
	for i := 0; i < 8; i++ {
		c := dial(t, addr) // completes in the kernel's backlog
		if _, err := c.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	waitfor.For(t, "an EMFILE accept error", func() bool { return stats().Stats.AcceptErrors["EMFILE"] > 0 })
	r := stats()
	if !r.Health.OK() || r.Health.Listeners[0].State != acceptor.Backoff.String() {
		t.Fatalf("after EMFILE the server must run and back off: %+v", r.Health)
	}
	if _, err := io.WriteString(stdin, "release\n"); err != nil {
		t.Fatal(err)
	}
	for i, c := range conns {
		if err := readPing(c, 10*time.Second); err != nil {
			t.Fatalf("connection %d queued during EMFILE not served after descriptors were freed: %v", i, err)
		}
	}
	r = stats()
	if !r.Health.OK() || r.Stats.Accepted != int64(len(conns)) {
		t.Fatalf("after release: health %+v, accepted %d, want %d", r.Health, r.Stats.Accepted, len(conns))
	}
	if err := echoOnce(dial(t, addr), 10*time.Second); err != nil {
		t.Fatalf("new connection after EMFILE: %v", err)
	}
}

// runEMFILEChild is the child of TestAcceptSurvivesEMFILE: an echo server
// under a descriptor limit of 256 whose table it then fills.
func runEMFILEChild() int {
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "emfile child:", err); return 1 }
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: 256, Max: 256}); err != nil {
		return fail(err)
	}
	s, err := NewServer(Config{Addrs: []string{"tcp://127.0.0.1:0"}, Loops: 1, FDReserve: 1,
		Logger: zerolog.New(os.Stderr).Level(zerolog.ErrorLevel)}, &echoHandler{})
	if err != nil {
		return fail(err)
	}
	if err := s.Start(); err != nil {
		return fail(err)
	}
	var filler []*os.File
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			break // EMFILE: the table is full
		}
		filler = append(filler, f)
	}
	a, _ := s.Addr(0)
	fmt.Println(a.String())
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "release":
			for _, f := range filler {
				f.Close()
			}
			filler = nil
		case "stats":
			b, _ := json.Marshal(emfileReport{Health: s.Health(), Stats: s.Stats()})
			fmt.Println(string(b))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Stop(ctx); err != nil {
		return fail(err)
	}
	return 0
}

// TestShutdownDrains: Shutdown stops accepting at once, lets open
// connections go on until they close, and returns nil when they have.
func TestShutdownDrains(t *testing.T) {
	s, a, conns := echoedConns(t, 3)
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(context.Background()) }()
	waitfor.For(t, "the server to drain", func() bool { return s.Health().Draining })
	if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
		c.Close()
		t.Fatal("a new connection was accepted while draining")
	}
	if h := s.Health(); !h.OK() {
		t.Fatalf("a draining server is healthy: %+v", h)
	}
	for i, c := range conns {
		if err := echoOnce(c, 5*time.Second); err != nil {
			t.Fatalf("connection %d while draining: %v", i, err)
		}
		c.Close()
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not return once every connection closed")
	}
}

// TestShutdownDeadlineClosesWithoutLoss: at the deadline open connections
// are closed, their queued output delivered first.
func TestShutdownDeadlineClosesWithoutLoss(t *testing.T) {
	payload := bytes.Repeat([]byte("z"), 8<<20)
	s, err := NewServer(Config{Addrs: []string{"tcp://127.0.0.1:0"}, Loops: 1, Logger: zerolog.Nop()},
		&sendOnTrafficHandler{payload: payload})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	a, _ := s.Addr(0)
	c := dial(t, a.String())
	if _, err := c.Write([]byte("go")); err != nil {
		t.Fatal(err)
	}
	waitfor.For(t, "the connection to be accepted", func() bool { return s.Stats().Accepted == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(ctx) }()
	time.Sleep(400 * time.Millisecond) // a slow reader: output is still queued at the deadline
	got, err := io.ReadAll(c)
	if err != nil || len(got) != len(payload) {
		t.Fatalf("read %d of %d bytes (%v): output lost at the drain deadline", len(got), len(payload), err)
	}
	if err := <-done; !errors.Is(err, ErrDrainDeadline) {
		t.Fatalf("Shutdown: %v, want ErrDrainDeadline", err)
	}
}

// sendOnTrafficHandler writes payload once when a connection first speaks.
type sendOnTrafficHandler struct{ payload []byte }

func (h *sendOnTrafficHandler) OnOpen(*Conn) {}
func (h *sendOnTrafficHandler) OnTraffic(c *Conn) {
	c.Discard(-1)
	if c.Value == nil {
		c.Value = true
		_ = c.Write(h.payload)
	}
}
func (h *sendOnTrafficHandler) OnClose(*Conn, error) {}

// TestStopAcceptingTakesBacklog: connections the kernel completed before
// StopAccepting (in the listen backlog, their first bytes sent) are served,
// not reset by the listener's close.
func TestStopAcceptingTakesBacklog(t *testing.T) {
	const n = 40
	h := &echoHandler{}
	s, addr := startServer(t, Config{Addrs: []string{"tcp://127.0.0.1:0"}, Loops: 2, holdAccept: make(chan struct{})}, h)
	conns := make([]net.Conn, 0, n)
	for i := 0; i < n; i++ {
		c := dial(t, addr)
		if _, err := c.Write([]byte{'x'}); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	if got := s.Stats().Accepted; got != 0 {
		t.Fatalf("%d connections accepted while accepting was held, want 0", got)
	}
	s.StopAccepting()
	lost := 0
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		var b [1]byte
		if _, err := io.ReadFull(c, b[:]); err != nil {
			lost++
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d connections in the backlog at StopAccepting got no echo", lost, n)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatal("a connection was accepted after StopAccepting")
	}
}
