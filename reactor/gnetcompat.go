package reactor

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"

	"github.com/panjf2000/gnet/v2"
	"github.com/panjf2000/gnet/v2/pkg/pool/goroutine"
	"golang.org/x/sys/unix"
)

// Everything the reactor takes from gnet beyond its documented API (an
// unexported field, the order of its calls, what its poller writes) is in
// the gnetcompat*.go files: here, gnetcompat_linux.go (epoll),
// gnetcompat_bsd.go (kqueue) and gnetcompat_pollopt.go (a build tag that
// is refused). Each reliance is listed in gnetReliances with where gnet
// does it and what checks it; the code that needs it is beside, or, for
// the designs built around a behaviour (the drain watcher, the accept
// path), named in the list; the tests of this code are in
// gnetcompat*_test.go. File names in the list are gnet's, at
// gnetVersion, under github.com/panjf2000/gnet/v2.

// gnetVersion is the gnet release whose source every reliance in
// gnetReliances was read and checked against. TestGnetVersion fails when
// the gnet linked differs: re-check each reliance against the new source
// (and run the tests it names), then change this.
const gnetVersion = "v2.9.7"

// gnetReliance is one thing the reactor relies on in gnet.
type gnetReliance struct {
	what  string // what gnet does that the reactor relies on, and how
	where string // where in gnet's source
	guard string // what checks it, at run time or in which test
}

// gnetReliances are what to re-check when gnet changes.
var gnetReliances = []gnetReliance{{
	what: "each loop's poller descriptor is the int field fd of eventloop.poller (*netpoll.Poller), and the loops are " +
		"Engine.eng.eventLoops (a load balancer).eventLoops ([]*eventloop); read with reflect (pollerFD, enginePollerFDs)",
	where: "gnet.go (Engine.eng), engine_unix.go (engine.eventLoops), load_balancer.go, eventloop_unix.go (eventloop.poller), " +
		"pkg/netpoll/poller_epoll_default.go and poller_kqueue_default.go (Poller.fd)",
	guard: "Start refuses to run unless it finds one epoll (kqueue) descriptor per loop (checkPollers); TestPollerFD, TestStartRefusesWithoutPoller",
}, {
	what: "gnet registers each socket in its loop's epoll set with EpollEvent{Fd: fd}, so a pause rewrites the mask with the same data " +
		"(setReadInterest); on kqueue gnet only adds and deletes EVFILT_WRITE, so EV_DISABLE on EVFILT_READ stays",
	where: "pkg/netpoll/poller_epoll_default.go (AddRead, ModRead, ModReadWrite), poller_kqueue_default.go",
	guard: "TestPollerFD (a paused connection is not read), TestFlowControlBoundsMemory",
}, {
	what:  "the default poller, not poll_opt's, which keeps a pointer in the epoll data word that the rewrite would overwrite",
	where: "pkg/netpoll/poller_epoll_ultimate.go, poller_kqueue_ultimate.go (build tag poll_opt)",
	guard: "a build with -tags poll_opt does not compile (gnetcompat_pollopt.go)",
}, {
	what: "gnet's ModReadWrite (a write left output queued) and ModRead (the queue drained) rewrite the whole epoll mask, " +
		"EPOLLIN included, undoing a pause; the reactor pauses again after such a write (afterWrite) and on a read " +
		"of a paused connection (onPausedTraffic), leaving the bytes unconsumed",
	where: "connection_unix.go (write, writev), eventloop_unix.go (write, open)",
	guard: "TestFlowControlBoundsMemory, TestPollerFD; LoopStats.SpuriousWakes counts the reads",
}, {
	what:  "with EdgeTriggeredIO a read that fills the buffer queues the next read itself (poller.Trigger), past the poller, so a pause cannot stop it",
	where: "eventloop_unix.go (read)",
	guard: "the reactor polls level-triggered only: Config has no edge-triggered option and no file passes gnet.WithEdgeTriggeredIO (TestLevelTriggeredOnly)",
}, {
	what: "accept0 ends the engine on any accept error but EAGAIN, EINTR, ECONNRESET and ECONNABORTED (EMFILE included), and " +
		"accepts until EAGAIN before any OnOpen; so the reactor accepts on listeners of its own (package acceptor) and gives gnet a " +
		"placeholder Unix socket that nothing can reach (gnetPlaceholder)",
	where: "acceptor_unix.go (accept0), pkg/netpoll/poller_epoll_default.go (Polling: ErrAcceptSocket is fatal)",
	guard: "TestAcceptSurvivesEMFILE; OnOpen closes a connection whose context is not the reactor's",
}, {
	what: "Engine.Register and EventLoop.Enroll take only a *net.TCPConn, *net.UnixConn or *net.UDPConn (any other type fails, " +
		"after a dup it does not close), duplicate the descriptor on a worker, close the original and run OnOpen on the loop " +
		"with the context given; the reactor hands them only connections from net.Listen, net.Dial and net.FileConn, and " +
		"counts the duplicate while it enrolls (acceptHooks.Admit, holdFDs)",
	where: "eventloop_unix.go (enroll, register0), gnet.go (Register)",
	guard: "TestMaxConnsLeavesConnectionsInBacklog, TestDialPoolIsBoundedAndReportsFailures, TestDetachAndAdoptMoveAConnection",
}, {
	what: "close calls OnClose before it writes the residual output once and closes the descriptor, so the descriptor is open " +
		"in OnClose (becomeTail duplicates it there, readRest reads it); a read of 0 bytes, or EPOLLRDHUP or EPOLLHUP " +
		"without EPOLLIN, is a full close with io.EOF, paused or not",
	where: "eventloop_unix.go (close, read), connection_linux.go (processIO)",
	guard: "becomeTail closes instead when gnet holds queued output; TestFINAfterOwnFINKeepsNoSocket, session/proxy's TestHalfClose*",
}, {
	what: "gnet writes queued output only on a writable event, at most 1024 slices per writev, and says nothing when it drains; " +
		"the drain watcher (drain.go) watches the same sockets' writability, and Close lingers until the queue is empty",
	where: "eventloop_unix.go (write, iovMax; close: one last write)",
	guard: "TestDrainWakesWithoutPolling, TestDrainWithoutKernelWakeup, TestCloseDeliversQueuedOutput, TestAbortWithOutputResets",
}, {
	what: "the ticker starts only once every loop is registered with the load balancer, so its first OnTick tells Start " +
		"that connections can be handed to the loops (engineHandler.OnTick)",
	where: "engine_unix.go (activateReactors, runEventLoops)",
	guard: "Start checks that gnet lists Config.Loops loops (checkPollers)",
}, {
	what:  "gnet keeps an enrolled net.Conn's *net.TCPAddr pair for the connection's life and reads it only on the loop, so shareAddrIPs may repoint their IPs",
	where: "eventloop_unix.go (enroll: newStreamConn with LocalAddr, RemoteAddr), connection_unix.go",
	guard: "reactor/ipshare's TestSharedIPsBounded; the race detector in every test",
}, {
	what:  "Engine.Stop polls every 500 ms for the engine's end, so Stop calls it with an expired context and waits for Rotate",
	where: "gnet.go (Stop, shutdownPollInterval)",
	guard: "none needed: only how fast Stop returns depends on it",
}, {
	what:  "gnet's start line begins \"Launching gnet\" and names the placeholder socket; gnetLogger logs it at debug",
	where: "engine_unix.go (run)",
	guard: "none needed: a changed line is logged at info",
}, {
	what: "each Register and Enroll runs on a goroutine of pkg/pool/goroutine.DefaultWorkerPool (ants), which waits for the loop " +
		"to open the connection and then stays idle for ExpiryDuration (10 s); GnetWorkers reads the pool's Running()",
	where: "eventloop_unix.go (enroll), pkg/pool/goroutine/goroutine.go (Default, ExpiryDuration)",
	guard: "TestGnetWorkersFollowRegistrations",
}}

// GnetWorkers returns the goroutines of gnet's worker pool alive now
// (tidegate_gnet_workers). Each registration (an accepted connection's
// hand-over to its loop, a dial) runs on one until the loop has opened the
// connection, and a worker idles 10 s after its last task: the count follows
// registrations in flight times the loops' lag, so bench soak's leak test
// leaves it out (a stuck registration would still hold a counted descriptor).
func GnetWorkers() int { return goroutine.DefaultWorkerPool.Running() }

// gnetPlaceholder makes the listen address gnet is given: gnet needs a
// listener of its own, and gets a Unix socket in a private directory, so
// that nothing can connect to it and gnet's own accept path, which ends the
// engine on EMFILE, never runs. remove deletes it; Start calls it once the
// engine has booted (it returns).
func gnetPlaceholder() (addr string, remove func(), err error) {
	dir, err := os.MkdirTemp("", "tidegate-")
	if err != nil {
		return "", nil, fmt.Errorf("reactor: directory for gnet's placeholder socket: %w", err)
	}
	return "unix://" + filepath.Join(dir, "gnet.sock"), func() { _ = os.RemoveAll(dir) }, nil
}

// pollerFD returns the epoll or kqueue descriptor of a gnet event loop. gnet
// does not export it; in gnetVersion it is the field fd of eventloop.poller
// (*netpoll.Poller), for both pollers. Reading unexported fields with
// reflect is allowed; the test TestPollerFD fails if the path changes.
func pollerFD(el gnet.EventLoop) (int, error) {
	return loopPollerFD(reflect.ValueOf(el))
}

// loopPollerFD is pollerFD for a reflected *eventloop, which is also what
// the engine's load balancer holds.
func loopPollerFD(v reflect.Value) (int, error) {
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return -1, fmt.Errorf("reactor: gnet event loop is %s, not a pointer to a struct", v.Type())
	}
	p := v.Elem().FieldByName("poller")
	if !p.IsValid() || p.Kind() != reflect.Pointer || p.IsNil() {
		return -1, fmt.Errorf("reactor: gnet event loop %s has no poller pointer field", v.Type())
	}
	fd := p.Elem().FieldByName("fd")
	if !fd.IsValid() || fd.Kind() != reflect.Int {
		return -1, fmt.Errorf("reactor: gnet poller %s has no int field fd", p.Type())
	}
	return int(fd.Int()), nil
}

// enginePollerFDs returns the poller descriptor of every event loop of a
// booted engine, in gnet's order. In gnetVersion the loops are the field
// eventLoops ([]*eventloop) of the load balancer (an interface) in the field
// eventLoops of Engine.eng; Start checks them all before it accepts, so a
// gnet whose internals moved refuses to start rather than running without
// flow control. A variable so that a test can make the lookup fail.
var enginePollerFDs = func(eng gnet.Engine) ([]int, error) {
	e := reflect.ValueOf(eng).FieldByName("eng")
	if !e.IsValid() || e.Kind() != reflect.Pointer || e.IsNil() || e.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("reactor: gnet.Engine has no engine pointer field eng")
	}
	lb := e.Elem().FieldByName("eventLoops")
	if !lb.IsValid() || lb.Kind() != reflect.Interface || lb.IsNil() {
		return nil, fmt.Errorf("reactor: gnet engine %s has no load balancer field eventLoops", e.Type())
	}
	lbv := lb.Elem()
	if lbv.Kind() != reflect.Pointer || lbv.IsNil() || lbv.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("reactor: gnet load balancer is %s, not a pointer to a struct", lbv.Type())
	}
	loops := lbv.Elem().FieldByName("eventLoops")
	if !loops.IsValid() || loops.Kind() != reflect.Slice {
		return nil, fmt.Errorf("reactor: gnet load balancer %s has no slice field eventLoops", lbv.Type())
	}
	fds := make([]int, loops.Len())
	for i := range fds {
		fd, err := loopPollerFD(loops.Index(i))
		if err != nil {
			return nil, fmt.Errorf("event loop %d: %w", i, err)
		}
		fds[i] = fd
	}
	return fds, nil
}

// checkPollers finds the poller descriptor of each of the engine's loops and
// checks that it is an epoll (kqueue) instance and that there is one per
// configured loop. An error here means pausing cannot work.
func (s *Server) checkPollers() error {
	fds, err := enginePollerFDs(s.engine)
	if err != nil {
		return fmt.Errorf("reactor: reading gnet's poller descriptors (flow control needs them; is gnet still %s?): %w", gnetVersion, err)
	}
	if len(fds) != s.cfg.Loops {
		return fmt.Errorf("reactor: gnet reports %d event loops, want %d (is gnet still %s?)", len(fds), s.cfg.Loops, gnetVersion)
	}
	for i, fd := range fds {
		if err := checkPollerFD(fd); err != nil {
			return fmt.Errorf("reactor: gnet's poller descriptor %d of event loop %d: %w", fd, i, err)
		}
	}
	return nil
}

// What follows runs on gnet's order of calls in close (OnClose while the
// descriptor is open, then one last write and the close) and on its own
// rewrites of the epoll mask; see gnetReliances.

// becomeTail takes c's socket out of gnet after gnet read its peer's EOF
// (inside gnet's OnClose, while the descriptor is still open), so that c
// stays writable. It reports false, leaving c to close as usual, when that
// is not possible.
func (l *Loop) becomeTail(c *Conn) bool {
	gc := c.gc
	if n := gc.OutboundBuffered(); n > 0 {
		// The reactor queues this connection's output itself; gnet's queue
		// is empty unless something wrote to gnet directly.
		l.srv.log.Error().Int("queued", n).Msg("half-close: gnet holds queued output it would drop; closing instead")
		return false
	}
	fd := gc.Fd()
	// The drain watcher's registration is keyed by gnet's descriptor, which
	// is about to close: it moves to the copy.
	waiting := c.waitIdx != 0
	nfd := -1
	if c.state&stateWriteShut == 0 || c.queued() > 0 || waiting {
		l.unwatch(c)
		var err error
		if nfd, err = dupCloseOnExec(fd); err != nil {
			l.srv.log.Warn().Err(err).Msg("half-close: cannot keep the socket (dup); closing instead")
			return false
		}
		l.forgetFD(fd)
	}
	// Otherwise our FIN went out before the peer's came and nothing is
	// left to write: the socket is done both ways and goes with gnet's
	// close. The tail without one (fd -1) still runs OnReadEOF and the
	// handler's close, as any other, and saves a dup, an epoll_ctl and a
	// close on the second side of every session that ends in order.
	c.more().tail = &tail{fd: nfd, local: gc.LocalAddr(), remote: gc.RemoteAddr()}
	if c.pause.flowControl() {
		l.stats.Paused.Add(-1)
	}
	c.pause = 0 // nothing is read from a tail
	c.gc = nil
	l.stats.HalfClosed.Add(1)
	l.stats.HalfCloseKept.Add(int64(c.queued()))
	if c.queued() > 0 {
		l.flushQueue(c)
	}
	if waiting && c.state&(stateCloseQueued|stateClosed) == 0 {
		l.watch(c)
	}
	return true
}

// maxRest bounds what readRest takes from a closing socket: more than any
// kernel receive buffer holds.
const maxRest = 64 << 20

// readRest gathers a paused connection's unread input, gnet's and the
// kernel's, before gnet closes it, so that the handler can still Peek it.
func (l *Loop) readRest(c *Conn, gc gnet.Conn) {
	in, _ := gc.Peek(-1)
	rest := append([]byte(nil), in...)
	_, _ = gc.Discard(-1)
	fd := gc.Fd()
	for len(rest) < maxRest {
		rest = slices.Grow(rest, 64<<10)
		n, err := unix.Read(fd, rest[len(rest):cap(rest)])
		if n <= 0 || err != nil {
			break
		}
		rest = rest[:len(rest)+n]
	}
	c.more().eofRest = rest
}

// afterWrite settles a write into gnet's queue with its queued output read
// once: a pause gnet undid (when a write leaves output queued, gnet rewrites
// the epoll mask to include EPOLLIN), and the process's queued total.
func (c *Conn) afterWrite(before int) {
	after := c.gc.OutboundBuffered()
	if c.pause != 0 && before == 0 && c.state&stateClosed == 0 && after > 0 {
		c.loop.setReadInterest(c, false)
	}
	c.loop.accountQueued(c, after)
}

// onPausedTraffic handles a read gnet made on a paused connection: gnet
// re-enables EPOLLIN when that connection's output fills or drains. If its
// own drain was awaited (it is its own sink), that is the news, seen here
// before the drain watcher's hop to the loop: the wait is checked first. Else
// the bytes stay buffered; if they pile up, the connection writing into this
// one is paused too, so that the re-enabling stops.
func (l *Loop) onPausedTraffic(c *Conn) {
	if c.waitIdx != 0 && l.checkDrain(c, l.Now()) {
		l.unwatch(c)
		if c.pause == 0 {
			return // resumed: afterCallback offers the input
		}
	}
	l.stats.SpuriousWakes.Add(1)
	l.setReadInterest(c, false)
	if p := c.producer; p != c && c.InboundBuffered() > l.inboundCap() {
		p.pauseFor(pausePeerInboundFull)
	}
}
