package proxy

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/protocol/proxyproto"
	"github.com/tidegate/tidegate/session/proxy/config"
)

// The PROXY protocol against real peers: HAProxy in front of the proxy
// (send-proxy, send-proxy-v2) and nginx in front (proxy_protocol on, v1);
// HAProxy (accept-proxy) and nginx (listen ... proxy_protocol) behind it.
// The tests start them on loopback ports and stop them; they are skipped
// only when the program is not installed (.ci/run installs both).

// peerBinary finds an installed program: on PATH, or in the sbin
// directories a non-root PATH may lack.
func peerBinary(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/usr/local/sbin", "/sbin"} {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	t.Skipf("%s is not installed (not on PATH, nor in /usr/sbin, /usr/local/sbin or /sbin): apt-get install %s, as .ci/run does, to run this test", name, name)
	return ""
}

// freeLoopbackAddr returns 127.0.0.1:port with a port that was free a
// moment ago.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startPeer runs argv (a proxy that does not fork) in dir until the test
// ends, once ready accepts connections.
func startPeer(t *testing.T, dir, ready string, argv ...string) {
	t.Helper()
	logPath := filepath.Join(dir, "peer.log")
	lf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, lf, lf
	if err := cmd.Start(); err != nil {
		lf.Close()
		t.Fatalf("starting %s: %v", strings.Join(argv, " "), err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	logTail := func() string { b, _ := os.ReadFile(logPath); return string(bytes.TrimSpace(b)) }
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		lf.Close()
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(argv[0]), logTail())
		}
	})
	// Its output is logged by the cleanup above when the test fails.
	waitfor.Check(t, fmt.Sprintf("%s to accept on %s", strings.Join(argv, " "), ready), func() error {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("%s exited before accepting on %s: %v", strings.Join(argv, " "), ready, err)
		default:
		}
		c, err := net.DialTimeout("tcp", ready, 200*time.Millisecond)
		if err != nil {
			return err
		}
		return c.Close()
	})
}

// startHAProxy runs HAProxy on cfg (the global and defaults sections come
// first, and a frontend on ready that refuses every connection, used to
// see that it is up).
func startHAProxy(t *testing.T, cfg string) {
	t.Helper()
	bin := peerBinary(t, "haproxy")
	dir := t.TempDir()
	ready := freeLoopbackAddr(t)
	text := fmt.Sprintf(`global
    maxconn 200
defaults
    mode tcp
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend ready
    bind %s
    tcp-request connection reject
%s`, ready, cfg)
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	startPeer(t, dir, ready, bin, "-db", "-f", path)
}

// startNginx runs nginx with the stream {} servers of servers (and one on
// ready that answers "ok", used to see that it is up).
func startNginx(t *testing.T, servers string) {
	t.Helper()
	bin := peerBinary(t, "nginx")
	dir := t.TempDir()
	ready := freeLoopbackAddr(t)
	load := ""
	if out, _ := exec.Command(bin, "-V").CombinedOutput(); !bytes.Contains(out, []byte("--with-stream ")) && !bytes.HasSuffix(bytes.TrimSpace(out), []byte("--with-stream")) {
		// Debian builds the stream module as libnginx-mod-stream.
		const module = "/usr/lib/nginx/modules/ngx_stream_module.so"
		if _, err := os.Stat(module); err != nil {
			t.Fatalf("nginx is installed but its stream module is not (%s: %v): apt-get install libnginx-mod-stream", module, err)
		}
		load = "load_module " + module + ";"
	}
	text := fmt.Sprintf(`%s
daemon off;
master_process off;
worker_processes 1;
pid %s/nginx.pid;
error_log %s/error.log info;
events { worker_connections 64; }
stream {
    server { listen %s; return "ok\n"; }
%s
}
`, load, dir, dir, ready, servers)
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	startPeer(t, dir, ready, bin, "-p", dir, "-c", path, "-e", filepath.Join(dir, "error.log"))
}

// dialFrom connects to addr from the loopback address src, so that the
// client's address differs from the one the peer proxies connect from.
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c
}

// clientIP is the loopback address the clients of these tests connect
// from; the peer proxies connect from 127.0.0.1.
const clientIP = "127.0.0.2"

// TestProxyProtocolFromRealPeers: HAProxy (send-proxy-v2, send-proxy) and
// nginx (proxy_protocol on) in front of a minecraft listener with
// BungeeCord forwarding: the backend sees the client's address, not the
// peer's, and the per-IP count is the client's.
func TestProxyProtocolFromRealPeers(t *testing.T) {
	hs := mc.Handshake{ProtocolVersion: mc.Protocol1_7_10, Address: []byte("play.example.com"), Port: 25565, NextState: mc.NextStateLogin}
	ls := loginStart("Steve")
	fwd := hs
	fwd.Address = mc.AppendBungeeAddress(nil, hs.Address, clientIP, mc.OfflineUUID([]byte("Steve")), nil)
	want := append(mc.AppendHandshake(nil, fwd), ls...)
	for _, tc := range []struct{ name, accept, peer, option string }{
		{"haproxy send-proxy-v2", "v2", "haproxy", "send-proxy-v2"},
		{"haproxy send-proxy", "v1", "haproxy", "send-proxy"},
		{"nginx proxy_protocol on", "any", "nginx", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			be, got := recordingBackend(t, len(want))
			p, addr := startProxy(t, ppMCConfig(be, tc.accept, "127.0.0.1", "forwarding: bungeecord\nlimits: {max_sessions_per_ip: 5}"))
			front := freeLoopbackAddr(t)
			if tc.peer == "haproxy" {
				startHAProxy(t, fmt.Sprintf("frontend fe\n    bind %s\n    default_backend be\nbackend be\n    server tidegate %s %s\n", front, addr, tc.option))
			} else {
				startNginx(t, fmt.Sprintf("    server { listen %s; proxy_pass %s; proxy_protocol on; }", front, addr))
			}
			c := dialFrom(t, clientIP, front)
			if _, err := c.Write(append(mc.AppendHandshake(nil, hs), ls...)); err != nil {
				t.Fatal(err)
			}
			expectRecorded(t, got, want)
			counts := fmt.Sprint(p.perIP.Counts())
			if counts != "map["+clientIP+":1]" {
				t.Fatalf("per-IP counts %s, want the client's address only", counts)
			}
			if r := p.Stats().Rejected; r["bad_proxy_protocol"] != 0 || r["proxy_protocol_untrusted"] != 0 {
				t.Fatalf("rejections %v", r)
			}
		})
	}
}

// TestProxyProtocolToRealPeers: a group with send_proxy_protocol v1 or v2
// in front of HAProxy (accept-proxy, passing what it read on to a Go
// backend as a v1 line) and of nginx (listen ... proxy_protocol, answering
// with the addresses it read): both read the client's address and port
// and the proxy's listen address from the header.
func TestProxyProtocolToRealPeers(t *testing.T) {
	for _, tc := range []struct{ name, send, peer string }{
		{"haproxy accept-proxy, v2", "v2", "haproxy"},
		{"haproxy accept-proxy, v1", "v1", "haproxy"},
		{"nginx proxy_protocol, v2", "v2", "nginx"},
		{"nginx proxy_protocol, v1", "v1", "nginx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			peer := freeLoopbackAddr(t)
			if tc.peer == "haproxy" {
				startHAProxy(t, fmt.Sprintf("frontend fe\n    bind %s accept-proxy\n    default_backend be\nbackend be\n    server rec %s send-proxy\n", peer, lineBackend(t)))
			} else {
				startNginx(t, fmt.Sprintf(`    server { listen %s proxy_protocol; return "PROXY TCP4 $proxy_protocol_addr $proxy_protocol_server_addr $proxy_protocol_port $proxy_protocol_server_port\r\n"; }`, peer))
			}
			_, addr := startProxy(t, fmt.Sprintf(`listeners: [{listen: "127.0.0.1:0", mode: raw, group: main}]
groups: {main: {backends: [{addr: %q}], send_proxy_protocol: %s}}
`, peer, tc.send))
			c := dialFrom(t, clientIP, addr)
			if _, err := c.Write([]byte("hello")); err != nil {
				t.Fatal(err)
			}
			line, err := io.ReadAll(c)
			if err != nil {
				t.Fatalf("reading %s's answer: %v", tc.peer, err)
			}
			h, n, err := proxyproto.Parse(line, proxyproto.Options{Versions: proxyproto.V1})
			if err != nil || n != len(line) {
				t.Fatalf("%s's view %q: %v", tc.peer, line, err)
			}
			client, listen := config.AddrPortOf(c.LocalAddr()), config.AddrPortOf(c.RemoteAddr())
			if h.Source != client || h.Destination != listen {
				t.Fatalf("%s read %v -> %v from the header; want %v -> %v", tc.peer, h.Source, h.Destination, client, listen)
			}
		})
	}
}

// lineBackend accepts one connection, reads the v1 PROXY line HAProxy
// starts it with, writes that line back and closes.
func lineBackend(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		var line []byte
		b := make([]byte, 1)
		for !bytes.HasSuffix(line, []byte("\r\n")) && len(line) < proxyproto.MaxV1Length {
			if _, err := c.Read(b); err != nil {
				return
			}
			line = append(line, b[0])
		}
		_, _ = c.Write(line)
	}()
	return ln.Addr().String()
}
