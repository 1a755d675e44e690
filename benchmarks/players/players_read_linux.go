package players

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// epollReaders read the sessions' replies on a few goroutines, each with an
// epoll set of its share of the sessions. A goroutine per connection in
// Go's netpoller cost most of the load generator's CPU at 500 sessions
// (two reads per reply, one of them EAGAIN, and a goroutine switch per
// reply); here a wake-up serves every session with replies waiting, with
// one read each. The epoll set is itself in Go's netpoller (an epoll
// descriptor is readable while events are pending), so a reader parks like
// any goroutine and no thread blocks in epoll_wait.
//
// Each session's socket is read through a duplicate of its descriptor,
// owned here and closed only after the readers stopped, so no read can
// reach a descriptor number that was closed and reused. The net.Conn stays
// open for the senders' writes.
type epollReaders struct {
	ph     *playersPhase
	groups []*epollGroup
	fds    []int // the duplicates, by session
	wg     sync.WaitGroup
}

// epollGroup is one reader goroutine's epoll set.
type epollGroup struct {
	f  *os.File
	rc syscall.RawConn
}

// epollBatch is how many ready sessions one epoll_wait takes.
const epollBatch = 256

// startReaders starts reading every session's replies.
func (ph *playersPhase) startReaders() (replyReaders, error) {
	r := &epollReaders{ph: ph, fds: make([]int, len(ph.players))}
	for i := range r.fds {
		r.fds[i] = -1
	}
	n := max(1, min(runtime.GOMAXPROCS(0), 4, len(ph.players)))
	for range n {
		g, err := newEpollGroup()
		if err != nil {
			r.closeAll()
			return nil, err
		}
		r.groups = append(r.groups, g)
	}
	for i, pl := range ph.players {
		fd, err := dupConn(pl.nc)
		if err != nil {
			r.closeAll()
			return nil, fmt.Errorf("session %d: %w", pl.id, err)
		}
		r.fds[i] = fd
		if err := r.groups[i%n].add(fd, pl.id); err != nil {
			r.closeAll()
			return nil, fmt.Errorf("session %d: %w", pl.id, err)
		}
	}
	// Each reader records into a histogram of its own: no lock per reply.
	ph.shards = make([]*latencyShard, n)
	for i := range ph.shards {
		ph.shards[i] = newLatencyShard(false)
	}
	buffers := make([]*replyBuffer, len(ph.players))
	for i, pl := range ph.players {
		rb, start := newReplyBuffer(pl.leftover, ph.shards[i%n])
		pl.leftover = nil
		buffers[i] = rb
		if !ph.consume(pl, rb, start, ph.now()) {
			r.remove(pl)
		}
	}
	for _, g := range r.groups {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.run(g, buffers)
		}()
	}
	return r, nil
}

func newEpollGroup() (*epollGroup, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1 for the reply readers: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("epoll descriptor %d of the reply readers: %w", fd, err)
	}
	f := os.NewFile(uintptr(fd), "players-epoll")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("epoll descriptor %d of the reply readers: %w", fd, err)
	}
	return &epollGroup{f: f, rc: rc}, nil
}

// add watches fd, session id's socket, for input (level-triggered: a
// session with more than one read's worth is reported again).
func (g *epollGroup) add(fd int, id uint32) error {
	var err error
	cerr := g.rc.Control(func(ep uintptr) {
		err = unix.EpollCtl(int(ep), unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(id)})
	})
	if err = errors.Join(cerr, err); err != nil {
		return fmt.Errorf("adding descriptor %d to the reply readers' epoll set: %w", fd, err)
	}
	return nil
}

// dupConn returns a duplicate of c's descriptor (close-on-exec; it shares
// the original's non-blocking mode).
func dupConn(c any) (int, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return -1, fmt.Errorf("connection %T has no descriptor", c)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1, fmt.Errorf("descriptor of the connection: %w", err)
	}
	dup := -1
	cerr := rc.Control(func(fd uintptr) { dup, err = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) })
	if err = errors.Join(cerr, err); err != nil {
		return -1, fmt.Errorf("duplicating the connection's descriptor: %w", err)
	}
	return dup, nil
}

// run reads the sessions of g whenever some have input, until g is closed.
func (r *epollReaders) run(g *epollGroup, buffers []*replyBuffer) {
	ph := r.ph
	events := make([]unix.EpollEvent, epollBatch)
	var waitErr error
	err := g.rc.Read(func(ep uintptr) bool {
		for {
			n, err := unix.EpollWait(int(ep), events, 0)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				waitErr = fmt.Errorf("epoll_wait of the reply readers: %w", err)
				return true
			}
			if n == 0 {
				return false // park until the set is readable
			}
			for _, ev := range events[:n] {
				pl := ph.players[ev.Fd]
				r.read(pl, buffers[ev.Fd])
			}
		}
	})
	switch {
	case waitErr != nil:
		ph.fail(waitErr)
	case err != nil && !ph.closing.Load(): // stop closes g once the phase is over
		ph.fail(fmt.Errorf("reply readers: %w", err))
	}
}

// read reads what session pl has, once, and checks it.
func (r *epollReaders) read(pl *player, rb *replyBuffer) {
	ph := r.ph
	sp := ph.space(rb)
	m, err := unix.Read(r.fds[pl.id], sp)
	if m > 0 && pl.dec != nil {
		pl.dec.XORKeyStream(sp[:m], sp[:m])
	}
	// The arrival time is taken after this read, not once per batch of
	// events: the reads and checks before it would make later replies
	// look earlier than they came.
	now := ph.now()
	switch {
	case m > 0:
		if !ph.consume(pl, rb, m, now) {
			r.remove(pl)
		}
	case err == unix.EAGAIN || err == unix.EINTR:
	default:
		if err == nil {
			err = errors.New("connection closed by the peer")
		}
		r.remove(pl)
		ph.readFailed(pl, err)
	}
}

// remove stops watching session pl, whose stream ended or broke: level
// triggering would report its end again and again.
func (r *epollReaders) remove(pl *player) {
	g := r.groups[int(pl.id)%len(r.groups)]
	_ = g.rc.Control(func(ep uintptr) { _ = unix.EpollCtl(int(ep), unix.EPOLL_CTL_DEL, r.fds[pl.id], nil) })
}

// stop closes the epoll sets, which ends the readers, waits for them and
// then closes the duplicated descriptors.
func (r *epollReaders) stop() {
	for _, g := range r.groups {
		g.f.Close()
	}
	r.wg.Wait()
	r.closeAll()
}

// closeAll closes the epoll sets and the duplicates made so far.
func (r *epollReaders) closeAll() {
	for _, g := range r.groups {
		g.f.Close()
	}
	for i, fd := range r.fds {
		if fd >= 0 {
			unix.Close(fd)
			r.fds[i] = -1
		}
	}
}
