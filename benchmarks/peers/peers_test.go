package peers

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidegate/tidegate/benchmarks/harness"
)

// TestMain lets the test binary stand in for `tidegate-bench peer goproxy` when a
// test starts it as a proxy process.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "peer" && os.Args[2] == "goproxy" {
		os.Exit(runGoproxyChild(os.Args[3:]))
	}
	os.Exit(m.Run())
}

func runGoproxyChild(args []string) int {
	fs := flag.NewFlagSet("goproxy", flag.ContinueOnError)
	listen, backend := fs.String("listen", "", ""), fs.String("backend", "", "")
	fs.String("log-level", "", "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	r := &GoRelay{Backend: *backend}
	if err := r.Listen(*listen); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go r.Serve()
	<-sig
	r.Close()
	return 0
}

// echoServer accepts connections and echoes them; each connection's end is
// reported on closed.
func echoServer(t *testing.T) (string, <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{}, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				io.Copy(c, c)
				c.Close()
				closed <- struct{}{}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String(), closed
}

func startRelay(t *testing.T, backend string) *GoRelay {
	t.Helper()
	r := &GoRelay{Backend: backend}
	if err := r.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- r.Serve() }()
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
		if err := <-served; err != nil {
			t.Error(err)
		}
	})
	return r
}

func TestGoRelayRelaysAndClosesBothSides(t *testing.T) {
	backend, backendClosed := echoServer(t)
	r := startRelay(t, backend)
	c, err := net.Dial("tcp", r.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	msg := bytes.Repeat([]byte("tidegate "), 10000)
	go c.Write(msg)
	got := make([]byte, len(msg))
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatal("echo through the relay differs")
	}
	// The client's half-close reaches the backend, whose close comes back.
	c.(*net.TCPConn).CloseWrite()
	if n, err := c.Read(got[:1]); n != 0 || err != io.EOF {
		t.Fatalf("after half-close: read %d, %v; want EOF", n, err)
	}
	select {
	case <-backendClosed:
	case <-time.After(5 * time.Second):
		t.Fatal("backend side not closed")
	}
	c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for r.Stats().Active != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("session still active: %+v", r.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := r.Stats(); st.Accepted != 1 || st.ConnectFailed != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestGoRelayClientResetClosesBackend(t *testing.T) {
	backend, backendClosed := echoServer(t)
	r := startRelay(t, backend)
	c, err := net.Dial("tcp", r.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("x"))
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	c.(*net.TCPConn).SetLinger(0)
	c.Close() // RST
	select {
	case <-backendClosed:
	case <-time.After(5 * time.Second):
		t.Fatal("backend side not closed after the client's reset")
	}
}

func TestGoRelayBackendDownClosesClient(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	ln.Close()
	r := startRelay(t, dead)
	c, err := net.Dial("tcp", r.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("read %d, %v; want the connection closed", n, err)
	}
	if r.Stats().ConnectFailed != 1 {
		t.Fatalf("stats %+v", r.Stats())
	}
}

var relayCfg = RelayConfig{Listen: "127.0.0.1:26000", Backend: "127.0.0.1:25565", Cores: 1, Sessions: 5000, Dir: "/tmp/x"}

const haproxyGolden = `# written by tidegate-bench (benchmarks/peers): haproxy
global
    nbthread 1
    maxconn 5256
    pidfile /tmp/x/haproxy.pid
    nosplice
defaults
    mode tcp
    timeout connect 5s
    timeout client 1h
    timeout server 1h
frontend bench
    bind 127.0.0.1:26000
    maxconn 5256
    default_backend echo
backend echo
    server b1 127.0.0.1:25565
`

const haproxySpliceGolden = `# written by tidegate-bench (benchmarks/peers): haproxy-splice
global
    nbthread 1
    maxconn 5256
    pidfile /tmp/x/haproxy.pid
defaults
    mode tcp
    timeout connect 5s
    timeout client 1h
    timeout server 1h
    option splice-auto
frontend bench
    bind 127.0.0.1:26000
    maxconn 5256
    default_backend echo
backend echo
    server b1 127.0.0.1:25565
`

const nginxGolden = `# written by tidegate-bench (benchmarks/peers): nginx
load_module /usr/lib/nginx/modules/ngx_stream_module.so;
daemon off;
worker_processes 1;
worker_rlimit_nofile 10512;
pid /tmp/x/nginx.pid;
error_log /tmp/x/error.log warn;
events {
    worker_connections 10256;
}
stream {
    upstream echo {
        server 127.0.0.1:25565;
    }
    server {
        listen 127.0.0.1:26000;
        proxy_pass echo;
        proxy_connect_timeout 5s;
        proxy_timeout 1h;
    }
}
`

func TestConfigWritersGolden(t *testing.T) {
	for name, c := range map[string]struct{ got, want string }{
		"haproxy":        {HAProxyConfig(relayCfg, false), haproxyGolden},
		"haproxy-splice": {HAProxyConfig(relayCfg, true), haproxySpliceGolden},
		"nginx":          {NginxConfig(relayCfg), nginxGolden},
	} {
		if c.got != c.want {
			t.Errorf("%s config:\n%s\nwant:\n%s", name, c.got, c.want)
		}
	}
}

// TestConfigScriptMatchesGo checks that scripts/peers/write-config.sh writes
// the same text as the Go writers.
func TestConfigScriptMatchesGo(t *testing.T) {
	script := filepath.Join("..", "..", "scripts", "peers", "write-config.sh")
	if _, err := os.Stat(script); err != nil {
		t.Fatal(err)
	}
	for kind, want := range map[string]string{"haproxy": haproxyGolden, "haproxy-splice": haproxySpliceGolden, "nginx": nginxGolden} {
		out, err := exec.Command("sh", script, kind, relayCfg.Listen, relayCfg.Backend, "1", "5000", "/tmp/x").CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v: %s", kind, err, out)
		}
		if string(out) != want {
			t.Errorf("write-config.sh %s:\n%s\nwant:\n%s", kind, out, want)
		}
	}
}

func TestParseKinds(t *testing.T) {
	ks, err := ParseKinds("tidegate, haproxy-splice,NGINX")
	if err != nil || len(ks) != 3 || ks[2] != KindNginx {
		t.Fatalf("ParseKinds: %v %v", ks, err)
	}
	for _, bad := range []string{"", "envoy", "nginx,nginx"} {
		if _, err := ParseKinds(bad); err == nil {
			t.Errorf("ParseKinds(%q) accepted", bad)
		}
	}
}

func TestParsePerfCount(t *testing.T) {
	out := "# started on Mon Nov 30 02:02:30 2026\n\n4891,,raw_syscalls:sys_enter,238319600,100.00,,\n"
	if n, err := parsePerfCount([]byte(out)); err != nil || n != 4891 {
		t.Fatalf("%d %v", n, err)
	}
	if _, err := parsePerfCount([]byte("<not counted>,,raw_syscalls:sys_enter,0,100.00,,\n")); err == nil {
		t.Fatal("a count perf did not make was accepted")
	}
}

func TestConfigWritersWithLimits(t *testing.T) {
	c := relayCfg
	c.MaxConns, c.NoFile = 1000, 1500
	hap := HAProxyConfig(c, false)
	for _, want := range []string{
		"global\n    nbthread 1\n    maxconn 1000\n    ulimit-n 1500\n    no strict-limits\n",
		"frontend bench\n    bind 127.0.0.1:26000\n    maxconn 1000\n",
	} {
		if !strings.Contains(hap, want) {
			t.Errorf("haproxy config lacks %q:\n%s", want, hap)
		}
	}
	ngx := NginxConfig(c)
	for _, want := range []string{
		"worker_rlimit_nofile 1500;\n",
		"    worker_connections 2256;\n", // two sockets per session, for the limit
		"stream {\n    limit_conn_zone $server_addr zone=sessions:1m;\n",
		"        listen 127.0.0.1:26000;\n        limit_conn sessions 1000;\n",
	} {
		if !strings.Contains(ngx, want) {
			t.Errorf("nginx config lacks %q:\n%s", want, ngx)
		}
	}
	tg := TidegateConfig(c, true)
	if !strings.Contains(tg, "  max_sessions: 1000\n") || !strings.Contains(tg, "    mode: raw\n") ||
		!strings.Contains(tg, "  connection_rate: 0\n  login_rate: 0\n  max_sessions_per_subnet: 0\n") {
		t.Errorf("tidegate config:\n%s", tg)
	}
	if strings.Contains(TidegateConfig(relayCfg, true), "max_sessions: 1000\n") {
		t.Error("without MaxConns the tidegate limit is not sized from Sessions")
	}
	// Without the limits, nothing of them is written.
	for name, text := range map[string]string{"haproxy": HAProxyConfig(relayCfg, false), "nginx": NginxConfig(relayCfg)} {
		for _, word := range []string{"ulimit-n", "strict-limits", "limit_conn"} {
			if strings.Contains(text, word) {
				t.Errorf("%s config without limits has %s", name, word)
			}
		}
	}
	if got := strings.Join(NoFileWrap("", 200), " "); got != "prlimit --nofile=200:200 --" {
		t.Errorf("NoFileWrap: %q", got)
	}
}

func TestStartUnderNoFileAndRunning(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("prlimit and /proc are Linux's")
	}
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("no prlimit:", err)
	}
	backend, _ := echoServer(t)
	listen, err := harness.FreeAddr("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	// The test binary stands in for a proxy: TestMain runs it as goproxy.
	p, err := Start(Spec{Kind: KindGoproxy, Executable: os.Args[0], Prlimit: prlimit,
		Relay: RelayConfig{Listen: listen, Backend: backend, Cores: 1, NoFile: 300}})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Running() {
		t.Fatal("Running is false for a started proxy")
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", p.PIDs()[0]))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`Max open files\s+300\s+300\s`).Match(b) {
		t.Errorf("limits of the proxy:\n%s", b)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if p.Running() {
		t.Fatal("Running is true after Stop")
	}
}
