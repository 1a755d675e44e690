package soak

// This file holds the push soak's short-lived subscribers: churn (subscribe,
// take two events in order, hold, leave) and slow ones (subscribe behind a
// small receive buffer, read nothing for a hold, then take what came: every
// event in order, or reported dropped before the events after the gap).

import (
	"bytes"
	"context"
	bin "encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/protocol/push"
)

// pushSubs are the push soak's short-lived subscribers, counted by short.
type pushSubs struct {
	short *shortLived
	topic string
}

// subscription is one subscriber's view of its stream: what it has read
// and not yet decoded, and the events it has seen.
type subscription struct {
	c       net.Conn
	buf     []byte
	ready   bool   // OpSubscribed came
	started bool   // an event came
	next    uint64 // the sequence number the next event must have
	events  int
	// dropped is what the server reported dropped; gaps what the sequence
	// skipped: a gap beyond what was reported is an event lost.
	dropped, gaps int64
}

// subscribe connects to the push server with d and subscribes to topic.
func (p *pushSubs) subscribe(ctx context.Context, d *net.Dialer) (*subscription, error) {
	nc, err := d.DialContext(ctx, "tcp", p.short.addr)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", p.short.addr, err)
	}
	_ = nc.SetWriteDeadline(time.Now().Add(loginTimeout))
	if _, err := nc.Write(push.AppendSubscribe(nil, []byte(p.topic))); err != nil {
		nc.Close()
		return nil, fmt.Errorf("subscribing: %w", err)
	}
	return &subscription{c: nc}, nil
}

// until reads and checks the stream until done reports true, within timeout.
func (s *subscription) until(timeout time.Duration, done func() bool) error {
	_ = s.c.SetReadDeadline(time.Now().Add(timeout))
	var chunk [16 << 10]byte
	for !done() {
		n, err := s.c.Read(chunk[:])
		s.buf = append(s.buf, chunk[:n]...)
		if derr := s.decode(); derr != nil {
			return derr
		}
		if err != nil && !done() {
			return fmt.Errorf("reading the stream (%d events so far): %w", s.events, err)
		}
	}
	return nil
}

// decode takes the whole frames read so far and checks their events.
func (s *subscription) decode() error {
	off := 0
	defer func() { s.buf = s.buf[:copy(s.buf, s.buf[off:])] }()
	for {
		f, n, err := push.DecodeFrame(s.buf[off:], push.DefaultMaxFrame)
		if errors.Is(err, push.ErrIncomplete) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("a frame of the stream: %w", err)
		}
		off += n
		for rest := f.Events; len(rest) > 0; {
			op, payload, r, err := push.NextEvent(rest)
			if err != nil {
				return fmt.Errorf("an event of the stream: %w", err)
			}
			rest = r
			if err := s.event(op, payload); err != nil {
				return err
			}
		}
	}
}

// dropPrefix is how a drop report's payload begins; the count follows.
var dropPrefix = bytes.TrimSuffix(push.AppendDropMeta(nil, 0), []byte(`0"}`))

// event checks one event: sequence numbers only grow, and any skipped
// were reported dropped first.
func (s *subscription) event(op byte, payload []byte) error {
	switch op {
	case push.OpSubscribed:
		s.ready = true
	case push.OpNonDataError:
		digits, ok := bytes.CutPrefix(bytes.TrimSuffix(payload, []byte(`"}`)), dropPrefix)
		n, err := strconv.ParseInt(string(digits), 10, 64)
		if !ok || err != nil {
			return fmt.Errorf("out-of-band event %q is no drop report", payload)
		}
		s.dropped += n
	case push.OpNext:
		if len(payload) < 8 {
			return fmt.Errorf("event of %d bytes: want a sequence number first", len(payload))
		}
		seq := bin.BigEndian.Uint64(payload)
		if s.started {
			if seq < s.next {
				return fmt.Errorf("event %d after event %d: repeated or reordered", seq, s.next-1)
			}
			s.gaps += int64(seq - s.next)
			if s.gaps > s.dropped {
				return fmt.Errorf("event %d after event %d: %d events skipped, %d reported dropped", seq, s.next-1, s.gaps, s.dropped)
			}
		}
		s.started, s.next = true, seq+1
		s.events++
	}
	return nil
}

// leave shuts the write side and reads (and checks) what still comes
// until the server ends the stream.
func (s *subscription) leave() error {
	if tc, ok := s.c.(*net.TCPConn); ok {
		if err := tc.CloseWrite(); err != nil {
			return fmt.Errorf("leaving: shutting the write side: %w", err)
		}
	}
	err := s.until(leaveTimeout, func() bool { return false })
	if errors.Is(err, io.EOF) {
		return nil
	}
	return fmt.Errorf("leaving: want the end of the stream: %w", err)
}

// churn subscribes, takes two events in order (timing the subscription
// and the first event: the latency figure), holds and leaves.
func (p *pushSubs) churn(ctx context.Context, _, _ int) error {
	start := time.Now()
	s, err := p.subscribe(ctx, &net.Dialer{Timeout: loginTimeout})
	if err != nil {
		return err
	}
	defer s.c.Close()
	if err := s.until(loginTimeout, func() bool { return s.ready }); err != nil {
		return fmt.Errorf("waiting to be subscribed: %w", err)
	}
	p.short.record(time.Since(start))
	first := time.Now()
	if err := s.until(loginTimeout, func() bool { return s.events >= 2 }); err != nil {
		return fmt.Errorf("waiting for two events: %w", err)
	}
	p.short.record(time.Since(first))
	if err := harness.Sleep(ctx, p.short.hold/2); err != nil {
		return err
	}
	return s.leave()
}

// slow subscribes behind a small receive buffer, reads nothing for a hold,
// then reads until an event published after the stall has come, and
// leaves.
func (p *pushSubs) slow(ctx context.Context, _, _ int) error {
	s, err := p.subscribe(ctx, &net.Dialer{Timeout: loginTimeout, Control: smallReadBuffer})
	if err != nil {
		return err
	}
	defer s.c.Close()
	if err := harness.Sleep(ctx, p.short.hold); err != nil {
		return err
	}
	// Events come pushEventRate a second: two seconds' worth more than the
	// stall's is what was sent after it.
	want := int(p.short.hold.Seconds()*pushEventRate) + 2*pushEventRate
	if err := s.until(loginTimeout+p.short.hold, func() bool { return s.events+int(s.dropped) >= want }); err != nil {
		return fmt.Errorf("reading after the stall: %w", err)
	}
	return s.leave()
}
