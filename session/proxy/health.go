package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/protocol/proxyproto"
	"github.com/tidegate/tidegate/session/proxy/config"
)

// Backend health is a circuit breaker per backend. Its state word,
// backend.state, is one int64 changed only by atomic operations, so the
// event loops and the active checkers share it without locks:
//
//	0        up: sessions pick it by weight
//	t > 0    down until t (router clock, unix ns): no session dials it;
//	         from t on, the first pick (or active check) that swaps the
//	         word for a probe lease is the one probe
//	-t < 0   probing until t: one connect or check decides; success makes
//	         it up, failure down for another cooldown. A probe not decided
//	         by t (which should not happen: connects and checks time out)
//	         lets another one take over.
//
// A backend that is up goes down after health.failures consecutive failed
// connects or active checks. Any successful connect or check makes it up.
const stateUp = 0

// probeDue reports whether state word s allows a probe at now.
func probeDue(s, now int64) bool {
	return (s > 0 && now >= s) || (s < 0 && now >= -s)
}

// claimProbe makes the caller the backend's one probe if state word s, as
// just loaded, allows a probe at now and no one else changed it meanwhile.
func (b *backend) claimProbe(s, now, lease int64) bool {
	return probeDue(s, now) && b.state.CompareAndSwap(s, -(now+lease))
}

// markUp records a successful connect or check; it reports whether the
// backend was not up before. It writes only when something changes, since
// every loop calls it for every session.
func (b *backend) markUp() bool {
	if b.failures.Load() != 0 {
		b.failures.Store(0)
	}
	return b.state.Load() != stateUp && b.state.Swap(stateUp) != stateUp
}

// markFailed records a failed connect or check at now. A probe's failure
// marks the backend down for another cooldown; otherwise the Failures-th
// failure in a row of a backend that is up marks it down. It reports
// whether the backend was marked down.
func (b *backend) markFailed(h config.ProbeConfig, now int64, probe bool) bool {
	n := b.failures.Add(1)
	until := now + int64(h.Cooldown)
	if probe {
		b.state.Store(until)
		return true
	}
	return int(n) >= h.Failures && b.state.CompareAndSwap(stateUp, until)
}

// dropProbe gives back a probe that ended undecided (its session went away
// before the connect did): the cooldown counts as over, so the next pick
// probes.
func (b *backend) dropProbe(now int64) {
	if s := b.state.Load(); s < 0 {
		b.state.CompareAndSwap(s, max(now, 1))
	}
}

// healthError is a backend's last failure.
type healthError struct {
	msg string
	at  int64 // router clock
}

func (b *backend) setError(now int64, err error) {
	b.lastErr.Store(&healthError{msg: err.Error(), at: now})
}

// recordLatency adds a successful check's latency to the last value and
// the EWMA (weight 1/4 for the new sample). Only the backend's checker
// writes them.
func (b *backend) recordLatency(d time.Duration) {
	b.lastLatency.Store(int64(d))
	avg := b.avgLatency.Load()
	if avg == 0 {
		avg = int64(d)
	} else {
		avg += (int64(d) - avg) / 4
	}
	b.avgLatency.Store(max(avg, 1))
}

// BackendStatus is one backend's health, as BackendHealth reports it.
type BackendStatus struct {
	// Group is the name of the backend's group.
	Group string `json:"group"`
	// Addr is the backend's address as configured.
	Addr string `json:"addr"`
	// Up is true when sessions may be sent to the backend.
	Up bool `json:"up"`
	// Probing is true while one connect or check decides whether a
	// backend whose cooldown has ended is back.
	Probing bool `json:"probing,omitempty"`
	// DownUntil is when the cooldown of a down backend ends; zero when up
	// or probing.
	DownUntil time.Time `json:"down_until,omitzero"`
	// Failures counts consecutive failed connects and checks.
	Failures int `json:"failures"`
	// Sessions is the number of sessions relayed to the backend now.
	Sessions int64 `json:"sessions"`
	// ConnectFailures counts session connects that failed or timed out.
	ConnectFailures int64 `json:"connect_failures"`
	// ChecksOK and ChecksFailed count active checks.
	ChecksOK     int64 `json:"checks_ok"`
	ChecksFailed int64 `json:"checks_failed"`
	// Latency is the duration of the last successful active check (connect,
	// and for status checks the status exchange), LatencyEWMA an
	// exponentially weighted average of them; both 0 before the first.
	Latency     time.Duration `json:"latency_ns"`
	LatencyEWMA time.Duration `json:"latency_ewma_ns"`
	// LastError is the last failed connect or check, at LastErrorAt; it is
	// kept after the backend recovers.
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
}

// BackendHealth returns the health of every backend, ordered by group
// name and then as configured. It may be called from any goroutine.
func (p *Proxy) BackendHealth() []BackendStatus {
	var out []BackendStatus
	for _, g := range p.cur().router.ordered {
		for _, b := range g.backends {
			out = append(out, b.status())
		}
	}
	return out
}

func (b *backend) status() BackendStatus {
	st := BackendStatus{
		Group:           b.group.name,
		Addr:            b.addr,
		Failures:        int(b.failures.Load()),
		Sessions:        b.active.Load(),
		ConnectFailures: b.connectFailures.Load(),
		ChecksOK:        b.checksOK.Load(),
		ChecksFailed:    b.checksFailed.Load(),
		Latency:         time.Duration(b.lastLatency.Load()),
		LatencyEWMA:     time.Duration(b.avgLatency.Load()),
	}
	switch s := b.state.Load(); {
	case s == stateUp:
		st.Up = true
	case s < 0:
		st.Probing = true
	default:
		st.DownUntil = time.Unix(0, s)
	}
	if e := b.lastErr.Load(); e != nil {
		st.LastError, st.LastErrorAt = e.msg, time.Unix(0, e.at)
	}
	return st
}

// GroupsDown returns, sorted, every group that some listener sends
// sessions to (the default group and the routes' groups when there is a
// minecraft listener, the group of every raw listener) and that has no
// backend up. It may be called from any goroutine.
func (p *Proxy) GroupsDown() []string {
	down := []string{}
	for _, g := range p.cur().router.ordered {
		if g.routed && !g.anyUp() {
			down = append(down, g.name)
		}
	}
	return down
}

func (g *group) anyUp() bool {
	for _, b := range g.backends {
		if b.state.Load() == stateUp {
			return true
		}
	}
	return false
}

// healthChecks are the active checkers, one goroutine per backend.
type healthChecks struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startChecks starts the active checkers of the current configuration
// when its health.interval is set.
func (p *Proxy) startChecks() {
	p.checksMu.Lock()
	defer p.checksMu.Unlock()
	p.startChecksLocked()
}

func (p *Proxy) startChecksLocked() {
	gen := p.cur()
	if gen.cfg.Probes.Interval <= 0 || p.checksEnded {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	hc := &healthChecks{cancel: cancel}
	for _, g := range gen.router.ordered {
		for _, b := range g.backends {
			hc.wg.Add(1)
			go func() {
				defer hc.wg.Done()
				p.checkLoop(ctx, gen, b)
			}()
		}
	}
	p.checks = hc
}

// stopChecks stops the active checkers for good and waits for them until
// ctx ends.
func (p *Proxy) stopChecks(ctx context.Context) error {
	p.checksMu.Lock()
	defer p.checksMu.Unlock()
	p.checksEnded = true
	return p.stopChecksLocked(ctx)
}

func (p *Proxy) stopChecksLocked(ctx context.Context) error {
	hc := p.checks
	if hc == nil {
		return nil
	}
	hc.cancel()
	done := make(chan struct{})
	go func() {
		hc.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		p.checks = nil
		return nil
	case <-ctx.Done():
		return fmt.Errorf("proxy: health checkers did not stop: %w", ctx.Err())
	}
}

// checkLoop checks b at once and then every health.interval until ctx ends.
func (p *Proxy) checkLoop(ctx context.Context, gen *generation, b *backend) {
	t := time.NewTicker(gen.cfg.Probes.Interval)
	defer t.Stop()
	for {
		p.checkOnce(ctx, gen, b)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// checkOnce runs one active check of b and records its result. When b's
// cooldown has ended the check is its probe.
func (p *Proxy) checkOnce(ctx context.Context, gen *generation, b *backend) {
	r, h := gen.router, gen.cfg.Probes
	probe := b.claimProbe(b.state.Load(), r.now(), r.lease)
	d, err := checkBackend(ctx, b.addr, b.group.check, h.Timeout, b.group.sendPP)
	now := r.now()
	if ctx.Err() != nil { // stopping: says nothing about the backend
		if probe {
			b.dropProbe(now)
		}
		return
	}
	log := p.log.With().Str("group", b.group.name).Str("backend", b.addr).Str("check", string(b.group.check)).Logger()
	if err != nil {
		b.checksFailed.Add(1)
		b.setError(now, err)
		if b.markFailed(h, now, probe) {
			log.Warn().Err(err).Int32("failures", b.failures.Load()).Dur("cooldown", h.Cooldown).Msg("backend marked down")
		} else {
			log.Debug().Err(err).Msg("backend check failed")
		}
		return
	}
	b.checksOK.Add(1)
	b.recordLatency(d)
	if b.markUp() {
		log.Info().Dur("latency", d).Msg("backend up")
	}
}

// statusCheckProtocol is the protocol version a status check announces:
// -1 by convention for a ping that does not know the server's version.
const statusCheckProtocol = -1

// checkBackend connects to addr within timeout, writes the PROXY header of
// version pp first if pp is set, and, for CheckStatus, does a Minecraft
// status exchange. It returns how long that took.
func checkBackend(ctx context.Context, addr string, kind config.ProbeKind, timeout time.Duration, pp proxyproto.Versions) (time.Duration, error) {
	start := time.Now()
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		if strings.Contains(err.Error(), addr) { // "dial tcp ADDR: ..." names it
			return 0, fmt.Errorf("%s check: %w", kind, err)
		}
		return 0, fmt.Errorf("%s check of %s: %w", kind, addr, err)
	}
	defer conn.Close()
	if hdr := checkProxyHeader(pp, conn); hdr != nil {
		_ = conn.SetWriteDeadline(start.Add(timeout))
		if _, err := conn.Write(hdr); err != nil {
			return 0, fmt.Errorf("%s check of %s: sending the PROXY header: %w", kind, addr, err)
		}
	}
	if kind == config.ProbeStatus {
		stop := context.AfterFunc(ctx, func() { _ = conn.Close() }) // Proxy.Stop need not wait for the timeout
		defer stop()
		_ = conn.SetDeadline(start.Add(timeout))
		if _, err := statusExchange(conn, addr); err != nil {
			return 0, fmt.Errorf("%s check of %s: %w", kind, addr, err)
		}
	}
	return max(time.Since(start), 1), nil
}

// statusExchange sends a status handshake and Status Request on conn and
// reads a Status Response carrying JSON, which it returns.
func statusExchange(conn net.Conn, addr string) ([]byte, error) {
	host, portText, _ := net.SplitHostPort(addr) // validated by config.Config.Validate
	port, _ := strconv.ParseUint(portText, 10, 16)
	req := mc.AppendHandshake(nil, mc.Handshake{
		ProtocolVersion: statusCheckProtocol, Address: []byte(host), Port: uint16(port), NextState: mc.NextStateStatus,
	})
	req = mc.AppendPacket(req, mc.PacketStatusRequest, nil)
	if _, err := conn.Write(req); err != nil {
		return nil, fmt.Errorf("sending status request: %w", err)
	}
	body, err := readFrame(conn, make([]byte, 0, 1024))
	if err != nil {
		return nil, fmt.Errorf("reading status response: %w", err)
	}
	id, data, err := mc.ParsePacketID(body)
	if err != nil {
		return nil, fmt.Errorf("status response: %w", err)
	}
	if id != mc.PacketStatusResponse {
		return nil, fmt.Errorf("got packet 0x%02x, want Status Response 0x%02x", id, mc.PacketStatusResponse)
	}
	rd := mc.NewReader(data)
	js, err := rd.ReadString(mc.MaxFrameLength)
	if err != nil {
		return nil, fmt.Errorf("status response: %w", err)
	}
	if !json.Valid(js) {
		return nil, fmt.Errorf("status response of %d bytes is not JSON", len(js))
	}
	return js, nil
}

// readFrame reads from conn until buf holds one whole frame and returns
// its body (packet ID and data).
func readFrame(conn net.Conn, buf []byte) ([]byte, error) {
	var readErr error
	for {
		n, hl, err := mc.SplitFrame(buf, mc.MaxFrameLength)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			return buf[hl:n], nil
		}
		if errors.Is(readErr, io.EOF) {
			return nil, fmt.Errorf("connection closed after %d bytes, inside the first frame", len(buf))
		}
		if readErr != nil {
			return nil, readErr
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		var m int
		m, readErr = conn.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
	}
}
