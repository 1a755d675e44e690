package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/protocol/proxyproto"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/proxy/config"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
)

// signature returns the v2 signature as a new slice.
func signature() []byte {
	s := proxyproto.Signature()
	return s[:]
}

// ppListener is a listener line that takes a PROXY header of accept from
// trusted.
func ppListener(mode, accept, trusted string) string {
	extra := ""
	if mode == "raw" {
		extra = ", mode: raw, group: main"
	}
	return fmt.Sprintf(`listeners: [{listen: "127.0.0.1:0"%s, proxy_protocol: {accept: %s, trusted: [%s]}}]`, extra, accept, trusted)
}

// ppRawConfig is a raw listener taking accept from trusted, relaying to backend.
func ppRawConfig(backend, accept, trusted, extra string) string {
	return fmt.Sprintf("%s\ngroups: {main: {backends: [{addr: %q}]}}\n%s\n", ppListener("raw", accept, trusted), backend, extra)
}

// ppMCConfig is a minecraft listener taking accept from trusted, every host
// going to backend.
func ppMCConfig(backend, accept, trusted, extra string) string {
	return fmt.Sprintf("%s\ndefault_group: main\ngroups: {main: {backends: [{addr: %q}]}}\n%s\n", ppListener("minecraft", accept, trusted), backend, extra)
}

var (
	ppClient = netip.MustParseAddrPort("203.0.113.7:40000")
	ppFront  = netip.MustParseAddrPort("198.51.100.1:25565")
)

// expectClosed reads c to its end and fails unless the proxy closed it
// (cleanly when clean is set) without sending anything.
func expectClosed(t *testing.T, c net.Conn, clean bool) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(c)
	if len(got) > 0 {
		t.Fatalf("got %q before the close, want nothing", got)
	}
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		t.Fatal("the proxy did not close the connection")
	case clean && err != nil:
		t.Fatalf("want a clean close, got %v", err)
	}
}

// echoOnce writes msg and reads it back from an echo backend.
func echoOnce(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != msg {
		t.Fatalf("echo: %q, %v; want %q", got, err, msg)
	}
}

// TestProxyHeaderBecomesClientAddress: a v1 or v2 header from a trusted
// source, sent in one write with the handshake and Login Start, reaches
// the backend as nothing but the client's address in the BungeeCord
// forwarding; the bytes after it arrive unchanged.
func TestProxyHeaderBecomesClientAddress(t *testing.T) {
	hs := mc.Handshake{ProtocolVersion: mc.Protocol1_7_10, Address: []byte("play.example.com"), Port: 25565, NextState: mc.NextStateLogin}
	ls := loginStart("Steve")
	for _, tc := range []struct {
		name, accept string
		header       []byte
		ip           string
	}{
		{"v1", "v1", proxyproto.AppendV1(nil, ppClient, ppFront), "203.0.113.7"},
		{"v2", "v2", proxyproto.AppendV2(nil, ppClient, ppFront), "203.0.113.7"},
		{"v2 over IPv6, any", "any", proxyproto.AppendV2(nil, netip.MustParseAddrPort("[2001:db8::7]:1"), netip.MustParseAddrPort("[2001:db8::1]:2")), "2001:db8::7"},
		{"v2 IPv4-mapped", "v2", proxyproto.AppendV2(nil, netip.MustParseAddrPort("[::ffff:203.0.113.8]:1"), netip.MustParseAddrPort("[2001:db8::1]:2")), "203.0.113.8"},
		{"v2 LOCAL keeps the real address", "v2", proxyproto.AppendV2Local(nil), "127.0.0.1"},
		{"v1 UNKNOWN keeps the real address", "any", []byte("PROXY UNKNOWN\r\n"), "127.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fwd := hs
			fwd.Address = mc.AppendBungeeAddress(nil, hs.Address, tc.ip, mc.OfflineUUID([]byte("Steve")), nil)
			want := append(mc.AppendHandshake(nil, fwd), ls...)
			be, got := recordingBackend(t, len(want))
			p, addr := startProxy(t, ppMCConfig(be, tc.accept, "127.0.0.1", "forwarding: bungeecord"))
			c := dial(t, addr)
			if _, err := c.Write(bytes.Join([][]byte{tc.header, mc.AppendHandshake(nil, hs), ls}, nil)); err != nil {
				t.Fatal(err)
			}
			expectRecorded(t, got, want)
			waitStats(t, p, "both frames counted", func(st proxymetrics.Stats) bool { return st.FramesC2S == 2 })
			if st := p.Stats(); st.BytesC2S != int64(len(mc.AppendHandshake(nil, hs))+len(ls)) || len(st.Rejected) != 0 {
				t.Fatalf("counted %d bytes up (want the handshake and login start only) and rejections %v", st.BytesC2S, st.Rejected)
			}
		})
	}
}

// TestProxyHeaderSplitAcrossReads: a header that arrives a byte at a
// time, and the data after it, reach an echo backend whole.
func TestProxyHeaderSplitAcrossReads(t *testing.T) {
	for _, v := range []string{"v1", "v2"} {
		t.Run(v, func(t *testing.T) {
			_, addr := startProxy(t, ppRawConfig(echoListener(t), "any", "127.0.0.0/8", ""))
			c := dial(t, addr)
			ver := proxyproto.V1
			if v == "v2" {
				ver = proxyproto.V2
			}
			hdr := proxyproto.Append(nil, ver, ppClient, ppFront)
			for i := range hdr {
				if _, err := c.Write(hdr[i : i+1]); err != nil {
					t.Fatal(err)
				}
				time.Sleep(2 * time.Millisecond)
			}
			echoOnce(t, c, "after a slow header")
		})
	}
}

// TestProxyHeaderRefusals: untrusted sources are refused at accept; from a
// trusted one, garbage, the wrong version, a truncated header and silence
// are refused with bad_proxy_protocol and a clean close. Sessions on the
// same loop are not held up by any of them.
func TestProxyHeaderRefusals(t *testing.T) {
	be := echoListener(t)
	for _, tc := range []struct {
		name, accept, trusted string
		send                  []byte
		closeWrite            bool // shut down the write side after send
		waits                 bool // refused only at the handshake timeout
		reason                string
	}{
		{"untrusted source", "v2", "10.0.0.0/8, 192.0.2.1", proxyproto.AppendV2(nil, ppClient, ppFront), false, false, "proxy_protocol_untrusted"},
		{"no header: a Minecraft handshake", "any", "127.0.0.1", handshake(764, "localhost", 2), false, false, "bad_proxy_protocol"},
		{"HTTP", "v2", "127.0.0.1", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), false, false, "bad_proxy_protocol"},
		{"v1 on a v2 listener", "v2", "127.0.0.1", proxyproto.AppendV1(nil, ppClient, ppFront), false, false, "bad_proxy_protocol"},
		{"v2 on a v1 listener", "v1", "127.0.0.1", proxyproto.AppendV2(nil, ppClient, ppFront), false, false, "bad_proxy_protocol"},
		{"v1 leading zero", "v1", "127.0.0.1", []byte("PROXY TCP4 203.0.113.07 198.51.100.1 1 2\r\n"), false, false, "bad_proxy_protocol"},
		{"v2 bad command", "v2", "127.0.0.1", append(signature(), 0x2F, 0x11, 0, 12), false, false, "bad_proxy_protocol"},
		{"v1 without CRLF", "v1", "127.0.0.1", []byte("PROXY UNKNOWN " + strings.Repeat("x", 100)), false, false, "bad_proxy_protocol"},
		{"half a header, then shutdown", "v2", "127.0.0.1", proxyproto.AppendV2(nil, ppClient, ppFront)[:20], true, false, "bad_proxy_protocol"},
		{"half a header, then silence", "v2", "127.0.0.1", proxyproto.AppendV2(nil, ppClient, ppFront)[:20], false, true, "bad_proxy_protocol"},
		{"silence", "any", "127.0.0.1", nil, false, true, "bad_proxy_protocol"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Refusals that need no timeout must come long before it.
			timeout := 5 * time.Second
			if tc.waits {
				timeout = 300 * time.Millisecond
			}
			p, addr := startProxy(t, ppRawConfig(be, tc.accept, tc.trusted, fmt.Sprintf("limits: {handshake_timeout: %v}\nloops: 1", timeout)))
			c := dial(t, addr)
			start := time.Now()
			if len(tc.send) > 0 {
				if _, err := c.Write(tc.send); err != nil {
					t.Fatal(err)
				}
			}
			if tc.closeWrite {
				_ = c.(*net.TCPConn).CloseWrite()
			}
			if tc.reason == "bad_proxy_protocol" {
				// A good session on the same (only) loop goes on meanwhile.
				good := dial(t, addr)
				v := proxyproto.V2
				if tc.accept == "v1" {
					v = proxyproto.V1
				}
				if _, err := good.Write(proxyproto.Append(nil, v, ppClient, ppFront)); err != nil {
					t.Fatal(err)
				}
				echoOnce(t, good, "unaffected")
				good.Close()
			}
			expectClosed(t, c, tc.reason == "bad_proxy_protocol")
			waited := time.Since(start)
			waitStats(t, p, fmt.Sprintf("the %s refusal", tc.reason), func(st proxymetrics.Stats) bool { return st.Rejected[tc.reason] == 1 })
			switch {
			case tc.waits && waited < timeout*2/3:
				t.Fatalf("closed after %v, before the handshake timeout %v", waited, timeout)
			case !tc.waits && waited > timeout*4/5:
				t.Fatalf("closed after %v, not at once (handshake timeout %v)", waited, timeout)
			case waited > timeout+5*time.Second:
				t.Fatalf("closed only after %v (handshake timeout %v)", waited, timeout)
			}
			waitStats(t, p, "the refused session to end", func(st proxymetrics.Stats) bool { return st.Active == 0 })
		})
	}
}

// TestProxyHeaderPerIPLimits: max_sessions_per_ip counts the address the
// header gives, not the load balancer's, and frees it when the session
// ends.
func TestProxyHeaderPerIPLimits(t *testing.T) {
	p, addr := startProxy(t, ppRawConfig(echoListener(t), "v2", "127.0.0.1", "limits: {max_sessions_per_ip: 1}"))
	open := func(src string) net.Conn {
		c := dial(t, addr)
		if _, err := c.Write(proxyproto.AppendV2(nil, netip.MustParseAddrPort(src), ppFront)); err != nil {
			t.Fatal(err)
		}
		return c
	}
	a := open("203.0.113.1:1000")
	echoOnce(t, a, "a")
	b := open("203.0.113.2:1000") // another client through the same balancer
	echoOnce(t, b, "b")
	dup := open("203.0.113.1:1001")
	expectClosed(t, dup, false)
	waitStats(t, p, "the max_sessions_per_ip refusal", func(st proxymetrics.Stats) bool { return st.Rejected["max_sessions_per_ip"] == 1 })
	a.Close()
	waitStats(t, p, "the closed session to end", func(st proxymetrics.Stats) bool { return st.Active == 1 })
	again := open("203.0.113.1:1002")
	echoOnce(t, again, "again")
	counts := fmt.Sprint(p.perIP.Counts())
	if counts != "map[203.0.113.1:1 203.0.113.2:1]" {
		t.Fatalf("per-IP counts %s, want the header's addresses", counts)
	}
}

// TestSendProxyProtocol: a group with send_proxy_protocol gets the header
// first on each backend connection, with the client's address and the
// address it connected to: the socket's, or those of the header the
// session itself came with.
func TestSendProxyProtocol(t *testing.T) {
	payload := []byte("first bytes")
	for _, tc := range []struct {
		name, send, accept string
		in                 []byte // the client's header, if any
	}{
		{"v1 from a direct client", "v1", "", nil},
		{"v2 from a direct client", "v2", "", nil},
		{"v2 in, v1 out", "v1", "v2", proxyproto.AppendV2(nil, ppClient, ppFront)},
		{"v1 in, v2 out", "v2", "v1", proxyproto.AppendV1(nil, ppClient, ppFront)},
		{"LOCAL in, v1 out", "v1", "v2", proxyproto.AppendV2Local(nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			listener := `listeners: [{listen: "127.0.0.1:0", mode: raw, group: main}]`
			if tc.accept != "" {
				listener = ppListener("raw", tc.accept, "127.0.0.1")
			}
			_, addr := startProxy(t, fmt.Sprintf("%s\ngroups: {main: {backends: [{addr: %q}], send_proxy_protocol: %s}}\n", listener, ln.Addr(), tc.send))
			c := dial(t, addr)
			if _, err := c.Write(append(append([]byte(nil), tc.in...), payload...)); err != nil {
				t.Fatal(err)
			}
			_ = ln.(*net.TCPListener).SetDeadline(time.Now().Add(5 * time.Second))
			bc, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer bc.Close()
			_ = bc.SetDeadline(time.Now().Add(5 * time.Second))
			src, dst := config.AddrPortOf(c.LocalAddr()), config.AddrPortOf(c.RemoteAddr())
			if tc.in != nil && !bytes.Equal(tc.in, proxyproto.AppendV2Local(nil)) {
				src, dst = ppClient, ppFront
			}
			v := proxyproto.V1
			if tc.send == "v2" {
				v = proxyproto.V2
			}
			want := append(proxyproto.Append(nil, v, src, dst), payload...)
			got := make([]byte, len(want))
			if _, err := io.ReadFull(bc, got); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("backend got %q, %v\nwant        %q", got, err, want)
			}
		})
	}
}

// TestHandOverKeepsProxiedAddress: a session admitted under its header's
// address is counted under that address on the process that takes it
// over, which then refuses a second session from it.
func TestHandOverKeepsProxiedAddress(t *testing.T) {
	be := echoListener(t)
	cfg := ppRawConfig(be, "v2", "127.0.0.1", "limits: {max_sessions_per_ip: 1}")
	oldP, addr := startProxy(t, cfg)
	newP, newAddr := startProxy(t, cfg)
	c := dial(t, addr)
	if _, err := c.Write(proxyproto.AppendV2(nil, ppClient, ppFront)); err != nil {
		t.Fatal(err)
	}
	echoOnce(t, c, "before")
	if n := handOver(t, oldP, newP); n != 1 {
		t.Fatalf("handed over %d sessions, want 1", n)
	}
	echoOnce(t, c, "after")
	n := newP.perIP.Counts()[ppClient.Addr().String()]
	if n != 1 {
		t.Fatalf("new proxy counts %d sessions for %s, want 1", n, ppClient.Addr())
	}
	var remote string
	for _, l := range newP.rs.Loops() {
		done := make(chan struct{})
		_ = l.Execute(func() {
			defer close(done)
			l.EachConn(func(conn *reactor.Conn) {
				if s, ok := conn.Value.(*session); ok && s.client == conn {
					remote = s.remoteAddr()
				}
			})
		})
		<-done
	}
	if remote != ppClient.String() {
		t.Fatalf("adopted session logs as %q, want %s", remote, ppClient)
	}
	dup := dial(t, newAddr)
	if _, err := dup.Write(proxyproto.AppendV2(nil, netip.AddrPortFrom(ppClient.Addr(), 1), ppFront)); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, dup, false)
	waitStats(t, newP, "the max_sessions_per_ip refusal", func(st proxymetrics.Stats) bool { return st.Rejected["max_sessions_per_ip"] == 1 })
}
