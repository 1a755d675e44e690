package proxy

import (
	"errors"
	"time"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/protocol/proxyproto"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/reactor/looptimer"
	"github.com/tidegate/tidegate/session/cluster"
	"github.com/tidegate/tidegate/session/proxy/config"
	"github.com/tidegate/tidegate/session/proxy/login"
	"github.com/tidegate/tidegate/session/proxy/reasons"
	"github.com/tidegate/tidegate/session/proxy/status"
)

// state is where a session is in its life.
type state uint8

const (
	stHandshake    state = iota // waiting for the handshake frame
	stLoginStart                // waiting for Login Start (username)
	stLocalStatus               // answering a status ping ourselves (status.go: cache, unknown host, no backend up)
	stLegacyPing                // a pre-1.7 server list ping: waiting for the rest of it, or for its answer
	stConnecting                // backend dial in flight; client bytes wait unconsumed
	stRelay                     // both connected: bytes flow both ways
	stDone                      // closing
	stAdopting                  // taken over from another process, waiting for its backend socket
	stHandedOver                // given to another process
	stProxyHeader               // waiting for the PROXY protocol header (proxyproto.go)
	stClusterWait               // Login Start read: waiting, not read, for the network's verdict (cluster.go)
	stBackendLogin              // a login the proxy completes: the backend's login is under way (terminate.go)
	stEncryption                // login: online: waiting for the Encryption Response (online.go)
	stAuthWait                  // login: online: waiting for the authenticator's verdict, input held
	stMoving                    // relaying, and being moved to another backend (moving.go)
)

// session joins a client and its backend. Both connections' callbacks run
// on the same loop, so it needs no lock.
//
// A session is held for as long as its player plays, so it keeps only what
// relaying needs (192 bytes, one size class): what it needs only until it
// relays (the handshake, a status reply, a take-over's bytes) is in pre,
// which is dropped when relaying begins.
type session struct {
	p       *Proxy
	gen     *generation // the configuration it started under
	client  *reactor.Conn
	backend *reactor.Conn
	group   *group
	target  *backend
	pp      *proxied        // what the PROXY header said of the client; nil without one
	ticket  *cluster.Ticket // in the network's state (cluster.go); nil without cluster or before login
	pre     *preRelay       // nil once relaying

	ip       string
	host     string // normalized virtual host
	username string

	timer      looptimer.Timer // handshake timeout, then idle timeout, then fin timeout
	lastActive int64
	opened     int64 // unix nanoseconds: when the client connected (to the first process, for one handed over)
	c2s, s2c   mc.FrameCounter
	protocol   int32

	state   state
	raw     bool
	probe   bool // the connect to target is its health probe, not yet decided
	dialing bool // counted in target.connecting

	// A half-close in either direction is relayed as one: a FIN from one
	// side becomes a shutdown of the write side toward the other.
	clientEOF, backendEOF bool
	onBackend             bool // counted in target.active
	unadmitted            bool // not yet counted by admit: its PROXY header has not arrived
	adopted               bool // taken over from another process (upgrade.go)
	keptHere              bool // taken back by this hand-over (handoversettle.go): it does not go again in it
	encrypted             bool // login: online: its ciphers are in its loop's ciphers (online.go)
	via                   via  // how its relay goes besides copying: re-framed, inspected (terminate.go)
}

// preRelay is the part of a session's state that it needs only until it
// relays: from the handshake to routing and connecting, for a status ping
// the proxy answers, or for a session taken over until both its sockets
// are open here.
type preRelay struct {
	route     *route        // minecraft: the virtual host's route
	reply     *status.Reply // the answer to a status ping the proxy answers; nil while a refresh is awaited
	handshake mc.Handshake
	hsLen     int    // bytes of the handshake frame at the start of the client's input
	early     []byte // what the client sent before a half-close while the backend was connecting

	adoptIn    [2][]byte // taken over: what the client and the backend sent that is not yet relayed
	adoptOut   [2][]byte // taken over: what was relayed to the client and the backend but not yet sent
	adoptTk    *handoverCluster
	adoptLogin login.Resumed // taken over: a terminated login's state, installed as its client opens

	term       *login.Backend    // a login the proxy completes: its backend side; nil for a relayed one
	online     *login.Online     // login: online, until the verdict
	clusterSeq uint32            // the login's verdict in flight; a later one is ignored
	legacy     mc.LegacyPingKind // a legacy ping's form, once it is whole
	heldInput  int               // the client's unread input, as counted in the buffer budget (inputbudget.go)
}

// listenerCfg is the configuration of the listener that accepted the client.
func (s *session) listenerCfg() *config.ListenerConfig { return s.gen.listenerOf(s.client) }

// loginDisconnectable reports whether the client is in the login state,
// where a disconnect message can be sent: past a handshake that was not a
// status ping, and not yet relaying (in play the proxy does not speak the
// game's protocol).
func (s *session) loginDisconnectable() bool {
	return s.pre != nil && !s.raw && s.pre.hsLen > 0 && s.pre.handshake.NextState != mc.NextStateStatus &&
		s.state != stRelay && s.state != stDone
}

// clientHandler receives the events of client connections.
type clientHandler Proxy

// backendHandler receives the events of backend connections.
type backendHandler struct{ p *Proxy }

func (h *clientHandler) OnOpen(c *reactor.Conn) {
	if s, ok := c.Value.(*session); ok { // handed over by another process
		s.adoptedClient(c)
		return
	}
	p := (*Proxy)(h)
	gen := p.cur()
	ls := p.loopOf(c)
	ls.counters.accepted.Add(1)
	ip := remoteIP(c)
	l := gen.listenerOf(c)
	pp := gen.proxyIn[l]
	if pp != nil {
		// Admitted once the PROXY header names the client.
		if !p.trustedProxySource(c, ls, l, pp) {
			c.Abort()
			return
		}
	} else if r, ok := p.admit(gen, ip); !ok {
		ls.refused(r, config.AddrPortOf(c.RemoteAddr()), "", "", "")
		p.refusalEvent(r).Str("remote", c.RemoteAddr().String()).Str("reason", r.String()).Msg("session refused")
		c.Abort()
		return
	}
	ls.counters.active.Add(1)
	s := &session{p: p, gen: gen, client: c, ip: ip, pre: &preRelay{}, lastActive: c.Loop().Now(), opened: time.Now().UnixNano()}
	c.Value = s
	s.timer.F = s.onTimer
	c.Loop().Schedule(&s.timer, s.gen.cfg.Limits.HandshakeTimeout)
	if pp != nil {
		s.state, s.unadmitted = stProxyHeader, true
		return
	}
	s.begin()
}

// begin starts an admitted session: a raw one connects, a minecraft one
// waits for its handshake.
func (s *session) begin() {
	if l := s.listenerCfg(); l.Mode == config.ModeRaw {
		s.raw = true
		s.group = s.gen.raw[l]
		s.connect()
	}
}

func (h *clientHandler) OnTraffic(c *reactor.Conn) {
	s := c.Value.(*session)
	switch s.state {
	case stHandshake:
		s.readHandshake()
	case stLoginStart:
		s.readLoginStart()
	case stLocalStatus:
		s.serveLocalStatus()
	case stLegacyPing:
		if s.pre.legacy != 0 {
			c.Discard(-1) // answered, or about to be: the rest is not read
		} else {
			s.readHandshake() // the rest of a legacy ping, or a modern frame after all
		}
	case stConnecting, stAuthWait:
		// A client that speaks first (raw mode) or keeps sending while its backend connects or its
		// verdict is awaited (read to see it leave) is held, not refused: stop reading it until then.
		if c.InboundBuffered() > s.gen.cfg.Limits.PrerouteBytes {
			c.PauseRead()
		}
	case stRelay, stMoving:
		if s.state == stMoving && s.moving().ClientTraffic() {
			break
		}
		s.relay(true)
	case stEncryption:
		s.readEncryptionResponse()
	case stClusterWait, stBackendLogin:
		s.waitingInput(c) // terminate.go
	case stAdopting: // kept for the backend, which is being adopted
	case stProxyHeader:
		s.readProxyHeader()
	default:
		c.Discard(-1)
	}
	s.accountInput()
}

func (h *clientHandler) OnClose(c *reactor.Conn, err error) {
	s, ok := c.Value.(*session)
	if !ok {
		return // refused at admission
	}
	p := s.p
	s.releaseInput()
	if !s.unadmitted {
		p.release(s.gen, s.ip)
	}
	s.endDial()
	ls := p.loopOf(c)
	ls.counters.active.Add(-1)
	c.Loop().Stop(&s.timer)
	s.leaveBackend()
	s.dropProbe()
	defer login.Forget(s, &ls.kept, &ls.ciphers) // after the rest is decrypted; one handed over has them in its state
	ls.players.Delete(s)                         // abandoning its move in flight
	ls.bungee.Leave(s)
	if errors.Is(err, reactor.ErrHandedOver) {
		return // the backend socket goes to the other process too, and the ticket with it
	}
	s.clientLeft(err) // online.go: counted when it gave up after the Encryption Request
	s.releaseTicket()
	s.state = stDone
	defer ls.reframes.Stop(s)
	defer ls.inspect.Stop(s)
	if b := s.backend; b != nil {
		if b.Opened() && !b.Closing() {
			s.relay(true) // what the client sent before it left
		}
		b.Close()
	}
}

func (h *backendHandler) OnOpen(bc *reactor.Conn) {
	s := bc.Value.(*session)
	if s.adopted && s.backend == nil {
		s.adoptedBackend(bc)
		return
	}
	p := s.p
	s.probe = false
	s.endDial()
	if s.target.MarkUp() {
		p.log.Info().Str("group", s.group.name).Str("backend", s.target.addr).Msg("backend up: a session connected")
	}
	s.target.Active.Add(1)
	s.onBackend = true
	ls := p.loopOf(bc)
	ls.counters.routed.Add(1)
	c := s.client
	s.state = stRelay
	if s.pre.term != nil {
		s.state = stBackendLogin // until the backend's Login Success (terminate.go)
	}
	buf := s.connectInput(c)
	batch := bc.Loop().Batch()
	if v := s.group.sendPP; v != 0 {
		var hdr [proxyproto.MaxV1Length]byte
		batch.Copy(s.appendProxyHeader(hdr[:0], v)) // first of all, and not counted as relayed
	}
	if hs, skip, ok := s.backendHandshake(ls, buf); ok { // rewrite_host, bungeecord forwarding, terminated logins
		batch.Copy(hs)
		batch.Add(buf[skip:])
		ls.counters.framesC2S.Add(int64(s.c2s.Count(hs) + s.c2s.Count(buf[skip:]))) // the rewritten frames, then the rest
	} else {
		batch.Add(buf)
		if !s.raw {
			ls.counters.framesC2S.Add(int64(s.c2s.Count(buf)))
		}
	}
	ls.counters.bytesC2S.Add(int64(len(buf)))
	_ = bc.WriteBatch(batch)
	c.Discard(len(buf))
	if s.state == stBackendLogin {
		c.ResumeRead() // read for answers to relayed login plugin requests, and nothing else (terminate.go)
		return
	}
	s.startRelay()
}

func (h *backendHandler) OnTraffic(bc *reactor.Conn) {
	s := bc.Value.(*session)
	if s.state == stBackendLogin {
		s.backendLogin(bc)
		return
	}
	if s.state == stMoving && s.moving().OldTraffic() {
		return
	}
	if s.state != stRelay && s.state != stMoving {
		bc.Discard(-1)
		return
	}
	s.relay(false)
}

func (h *backendHandler) OnClose(bc *reactor.Conn, err error) {
	s := bc.Value.(*session)
	p := s.p
	c := s.client
	s.endDial()
	if errors.Is(err, reactor.ErrHandedOver) {
		return // the client's OnClose did the accounting
	}
	if c == nil { // handed over to this process, and ended before its client socket opened
		s.state = stDone
		return
	}
	var de *reactor.DialError
	if errors.As(err, &de) {
		p.loopOf(bc).counters.connectFailed.Add(1)
		b, now := s.target, s.gen.router.now()
		b.ConnectFailures.Add(1)
		b.SetError(now, err)
		down := false
		if de.Local {
			// This process ran short (descriptors, the dial queue): that says
			// nothing about the backend, so it is not held against it.
			s.dropProbe()
		} else {
			down = b.MarkFailed(s.gen.cfg.Probes, now, s.probe)
		}
		p.log.Warn().Str("group", s.group.name).Str("backend", b.addr).Str("host", s.host).Str("user", s.username).Err(err).
			Bool("local", de.Local).Bool("probe", s.probe).Bool("marked_down", down).Int32("failures", b.Failures.Load()).Msg("backend connect failed")
		s.probe = false
		switch {
		case c.Closing():
		case !s.raw && s.pre != nil && s.pre.handshake.NextState == mc.NextStateStatus:
			// The status ping is still unanswered in the client's input.
			s.refused(reasons.BackendUnavailable)
			s.backend = nil
			s.serveOfflineStatus()
		default:
			s.reject(reasons.BackendUnavailable, nil)
		}
		return
	}
	if s.state == stRelay && !c.Closing() { // what the backend sent before it left
		s.relay(false)
	}
	if s.state == stBackendLogin && !c.Closing() {
		if s.backendLogin(bc); s.state == stBackendLogin { // what it sent, then the end
			s.backendLoginFailed(login.Closed())
		}
		return
	}
	if (s.state == stMoving || s.state == stRelay) && s.fallBack(bc) { // moving.go
		return
	}
	s.leaveBackend()
	s.state = stDone
	c.Close()
}

// OnReadEOF relays a client's half-close: what it sent goes on to the
// backend, then the backend's write side is shut down, and the backend's
// answer still flows back until it finishes too.
func (h *clientHandler) OnReadEOF(c *reactor.Conn) {
	s, ok := c.Value.(*session)
	if !ok {
		c.Close() // refused at admission
		return
	}
	switch s.state {
	case stRelay:
		s.clientEOF = true // first: a re-framed relay then takes all that is left
		s.relay(true)
		s.backend.CloseWrite()
		s.halfClosed()
	case stConnecting:
		// The input is gone after this call: keep it for the replay, after
		// which the backend's write side is shut down (CloseWrite waits for
		// the connect).
		s.holdInput(c)
		s.clientEOF = true
		s.backend.CloseWrite()
	case stLegacyPing:
		s.legacyReadEOF()
	case stProxyHeader:
		s.proxyHeaderEOF()
	default:
		s.clientLeft(nil) // before routing there is nothing to relay a half-close to
		s.state = stDone
		c.Close()
	}
}

// OnReadEOF relays a backend's half-close to the client; the client's
// input still flows to the backend until it finishes too.
func (h *backendHandler) OnReadEOF(bc *reactor.Conn) {
	s := bc.Value.(*session)
	if s.state != stRelay {
		bc.Close()
		return
	}
	if s.relay(false); s.via&viaInspect != 0 { // its end moves the player (OnClose: fallBack)
		bc.Close()
		return
	}
	s.backendEOF = true // a re-framed session's last frames are final now (relayReframed)
	s.relay(false)
	s.client.CloseWrite()
	s.halfClosed()
}

// relay moves what the client (fromClient) or the backend has buffered to
// the other side, with one write, and applies flow control to it.
func (s *session) relay(fromClient bool) {
	cnt := &s.p.loopOf(s.client).counters
	from, to, fs, bytes, frames := s.backend, s.client, &s.s2c, &cnt.bytesS2C, &cnt.framesS2C
	if fromClient {
		from, to, fs, bytes, frames = s.client, s.backend, &s.c2s, &cnt.bytesC2S, &cnt.framesC2S
	}
	buf, _ := from.Peek(-1)
	if len(buf) == 0 {
		return
	}
	if to.Closing() {
		from.Discard(-1)
		return
	}
	if s.via&viaInspect != 0 && !fromClient {
		s.relayInspected() // moving.go
		return
	} else if s.via&viaReframe != 0 {
		s.relayReframed(from, to, fs, bytes, frames)
		return
	}
	cr := s.ciphers()
	cr.Inbound(buf, from == s.client) // in place: the bytes are consumed below
	bytes.Add(int64(len(buf)))
	if !s.raw && !fs.Broken() {
		frames.Add(int64(fs.Count(buf)))
		if fs.Broken() {
			cnt.unframed.Add(1)
		}
	}
	cr.Outbound(buf, to == s.client) // counted above, in the clear
	_ = to.Write(buf)
	from.Discard(len(buf))
	s.lastActive = from.Loop().Now()
	from.Backpressure()
}

// readHandshake parses the first frame and routes the session by its host.
func (s *session) readHandshake() {
	c := s.client
	buf, _ := c.Peek(-1)
	if len(buf) > 0 && buf[0] == mc.LegacyPingID && s.readLegacyPing(buf) {
		return // pre-1.7 server list ping (status.go)
	}
	n, hl, ok := s.preRouteFrame(buf, 0, mc.MaxHandshakeBody)
	if !ok {
		return
	}
	hs, err := mc.ParseHandshake(buf[hl:n])
	if err != nil {
		s.reject(reasons.BadHandshake, err)
		return
	}
	pre := s.pre
	pre.hsLen = n
	s.protocol = hs.ProtocolVersion
	hs.Address = append([]byte(nil), hs.Address...) // the input buffer is reused
	pre.handshake = hs
	host, _ := mc.SplitAddress(hs.Address)
	norm := mc.AppendNormalizedHost(make([]byte, 0, len(host)), host)
	s.host = string(norm)
	if pre.route = s.gen.router.route(norm); pre.route != nil {
		s.group = pre.route.group
	}
	if s.group == nil {
		if hs.NextState == mc.NextStateStatus {
			c.Discard(n)
			s.state = stLocalStatus
			pre.reply = s.gen.unknownHost
			s.serveLocalStatus()
			return
		}
		s.reject(reasons.UnknownHost, nil)
		return
	}
	if hs.NextState == mc.NextStateStatus {
		switch {
		case s.gen.cfg.Status.CacheTTL == 0:
			s.connect() // relayed to a backend
		case !s.group.anyUp():
			s.noHealthyBackend()
		default:
			c.Discard(n)
			s.serveCachedStatus()
		}
		return
	}
	s.state = stLoginStart
	s.readLoginStart()
}

// preRouteFrame finds the whole frame, of at most most bytes, that starts at
// buf[off:] before the backend is connected. It reports false when the frame
// is incomplete (after rejecting a client whose unrouted input passed the
// pre-route cap) or bad or over most (after rejecting it).
func (s *session) preRouteFrame(buf []byte, off, most int) (n, hl int, ok bool) {
	n, hl, err := mc.SplitFrame(buf[off:], min(s.gen.cfg.Limits.MaxFrame, most))
	if err != nil {
		s.reject(reasons.BadFrame, err)
		return 0, 0, false
	}
	if n == 0 {
		if len(buf) > s.gen.cfg.Limits.PrerouteBytes {
			s.reject(reasons.PrerouteCap, nil)
		}
		return 0, 0, false
	}
	return n, hl, true
}

// readLoginStart waits for Login Start to attribute the session, then connects.
func (s *session) readLoginStart() {
	c := s.client
	buf, _ := c.Peek(-1)
	off := s.pre.hsLen
	n, hl, ok := s.preRouteFrame(buf, off, mc.MaxLoginStartBody)
	if !ok {
		return
	}
	name, err := mc.ParseLoginStart(buf[off+hl : off+n])
	if err != nil {
		s.reject(reasons.BadLoginStart, err)
		return
	}
	// Before the name is kept: a refused one must reach no backend, cluster
	// or log line but the refusal's, which quotes it (err).
	if err := s.gen.usernames.Check(name); err != nil {
		s.reject(reasons.BadUsername, err)
		return
	}
	s.username = string(name)
	if set := s.group.login; set != nil {
		if s.pre.term, err = login.NewBackend(set, s.protocol, buf[off+hl:off+n], s.ip); err != nil {
			s.reject(reasons.BadLoginStart, err)
			return
		}
	}
	if r, ok := s.p.src.AdmitLogin(&s.gen.cfg.Limits, s.ip); !ok {
		s.reject(r, nil)
		return
	}
	if s.pre.term != nil && s.group.login.Online {
		s.requestEncryption(buf, off+n, buf[off+hl:off+n])
		return
	}
	if s.p.cluster != nil {
		s.clusterLogin(buf[off+hl : off+n])
		return
	}
	s.connect()
}

// connect dials a backend of the session's group on the client's loop.
func (s *session) connect() {
	c := s.client
	l := c.Loop()
	r := s.gen.router
	b, probe := s.group.pick(&s.p.loopOf(c).rnd, l.Index(), r.now(), r.lease)
	if b == nil {
		s.noHealthyBackend()
		return
	}
	s.target, s.probe = b, probe
	s.dialing = true
	b.Connecting.Add(1)
	s.state = stConnecting
	s.backend = l.Dial(b.addr, s.gen.cfg.Limits.ConnectTimeout, &s.p.backendSide, s)
}
