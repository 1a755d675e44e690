package session

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/mcclient"
)

// maxErrorSamples is how many error messages a phase keeps.
const maxErrorSamples = 8

// client is one benchmark connection, driven by its own goroutine.
type client struct {
	id   uint32
	nc   net.Conn
	k    *codec
	p    Params
	base time.Time // clock origin for send times

	// hold, when set, delays every burst by the emulated one-way time.
	hold *holder

	rbuf   []byte
	rlen   int
	wbuf   []byte
	sendNs []int64 // send time of the burst in each window slot
	hist   *hdrhistogram.Histogram

	// echoes is the number of echoes received and checked so far, read by
	// the watchdog and the progress bar.
	echoes atomic.Int64
	// measured counts the echoes received in recorded (measured) runs, one
	// by one as they are checked: the phase's roundtrips are their sum.
	measured int64

	mu      sync.Mutex
	errors  int64
	samples []string
}

func newClient(id uint32, nc net.Conn, k *codec, p Params, base time.Time, leftover []byte, hold time.Duration) (*client, error) {
	c := &client{
		id: id, nc: nc, k: k, p: p, base: base,
		rbuf:   make([]byte, max(256<<10, 4*k.frameLen)),
		wbuf:   make([]byte, 0, p.Burst*k.frameLen),
		sendNs: make([]int64, p.Window),
		hist:   harness.NewLatencyHistogram(),
	}
	c.rlen = copy(c.rbuf, leftover)
	if hold > 0 {
		h, err := newHolder(nc, id, base, hold)
		if err != nil {
			return nil, err
		}
		c.hold = h
	}
	return c, nil
}

// close closes the connection and stops its writer, if it has one.
func (c *client) close() {
	c.nc.Close()
	if c.hold != nil {
		c.hold.close()
	}
}

// fail counts one error and keeps its message if there is room.
func (c *client) fail(err error) {
	c.mu.Lock()
	c.errors++
	if len(c.samples) < maxErrorSamples {
		c.samples = append(c.samples, err.Error())
	}
	c.mu.Unlock()
}

func (c *client) now() int64 { return int64(time.Since(c.base)) }

// run sends packets with sequence numbers from..to-1, window bursts at a
// time, and checks every echo, recording latencies when record is set. It
// returns when every echo has arrived, or with the error that ended the
// connection. Mismatched echoes are counted with fail and do not stop it.
func (c *client) run(from, to int, record bool) error {
	burst, window := c.p.Burst, c.p.Window
	nBursts := (to - from + burst - 1) / burst
	sent, done := 0, 0 // bursts
	fl := c.k.frameLen
	send := func() error {
		for sent < nBursts && sent-done < window {
			lo := from + sent*burst
			hi := min(lo+burst, to)
			c.wbuf = c.wbuf[:0]
			for s := lo; s < hi; s++ {
				c.wbuf = c.k.appendFrame(c.wbuf, c.id, uint32(s))
			}
			now := c.now()
			c.sendNs[sent%window] = now
			sent++
			if c.hold != nil {
				c.hold.push(now, c.wbuf)
				continue
			}
			if _, err := c.nc.Write(c.wbuf); err != nil {
				return fmt.Errorf("conn %d: writing burst %d: %w", c.id, sent-1, err)
			}
		}
		return nil
	}
	if err := send(); err != nil {
		return err
	}
	recv := from
	for recv < to {
		// Frames may already be buffered (left over from login or the last run).
		pos := 0
		if c.rlen > 0 {
			now := c.now()
			for c.rlen-pos >= fl && recv < to {
				f := c.rbuf[pos : pos+fl]
				if !c.k.frameHeaderOK(f) {
					return fmt.Errorf("conn %d seq %d: length prefix % x, want % x: %w", c.id, recv, f[:len(c.k.header)], c.k.header, mcclient.ErrFramingLost)
				}
				if err := c.k.check(f, c.id, uint32(recv)); err != nil {
					c.fail(err)
				}
				if record {
					_ = c.hist.RecordValue(max(now-c.sendNs[((recv-from)/burst)%window], harness.LatencyLowest))
					c.measured++
				}
				recv++
				pos += fl
				if (recv-from)%burst == 0 || recv == to {
					done++
				}
			}
			if rest := c.rbuf[pos:c.rlen]; len(rest) > 0 && !c.k.frameHeaderOK(rest) {
				return fmt.Errorf("conn %d seq %d: length prefix % x, want % x: %w", c.id, recv, rest[:min(len(rest), len(c.k.header))], c.k.header, mcclient.ErrFramingLost)
			}
			if pos > 0 {
				c.rlen = copy(c.rbuf, c.rbuf[pos:c.rlen])
				c.echoes.Store(int64(recv))
				if err := send(); err != nil {
					return err
				}
			}
		}
		if recv == to {
			break
		}
		n, err := c.nc.Read(c.rbuf[c.rlen:])
		c.rlen += n
		if err != nil && n == 0 {
			if c.hold != nil {
				if werr := c.hold.writeErr(); werr != nil {
					return werr
				}
			}
			return fmt.Errorf("conn %d: reading echo of seq %d: %w", c.id, recv, err)
		}
	}
	if c.rlen > 0 {
		c.fail(fmt.Errorf("conn %d: %d unexpected bytes after the echo of seq %d", c.id, c.rlen, to-1))
		c.rlen = 0
	}
	return nil
}
