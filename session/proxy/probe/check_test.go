package probe

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/protocol/proxyproto"
	"github.com/tidegate/tidegate/session/proxy/config"
)

// TestCheckErrorNamesTheAddressOnce: a failed connect is reported with
// net's error, which names the address, and nothing before it that does again.
func TestCheckErrorNamesTheAddressOnce(t *testing.T) {
	addr := refusedAddr(t)
	_, err := Check(t.Context(), addr, config.ProbeTCP, time.Second, 0)
	if err == nil {
		t.Fatalf("a check of %s, where nothing listens, passed", addr)
	}
	if n := strings.Count(err.Error(), addr); n != 1 || !strings.HasPrefix(err.Error(), "tcp check: ") {
		t.Fatalf("%q names %s %d times; want once, after \"tcp check: \"", err, addr, n)
	}
}

// TestHealthCheckSendsProxyHeader: an active check of a group that sends
// PROXY headers starts with v2's LOCAL command, or a v1 line with the
// check's own endpoints.
func TestHealthCheckSendsProxyHeader(t *testing.T) {
	for _, v := range []proxyproto.Versions{proxyproto.V1, proxyproto.V2} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan []byte, 1)
		go func() {
			c, err := ln.Accept()
			if err != nil {
				got <- nil
				return
			}
			defer c.Close()
			b, _ := io.ReadAll(c)
			got <- b
		}()
		if _, err := Check(context.Background(), ln.Addr().String(), config.ProbeTCP, 2*time.Second, v); err != nil {
			t.Fatal(err)
		}
		b := <-got
		ln.Close()
		h, n, err := proxyproto.Parse(b, proxyproto.Options{Versions: v})
		if err != nil || n != len(b) {
			t.Fatalf("%s: check sent %q: %v", v, b, err)
		}
		if v == proxyproto.V2 && h.Command != proxyproto.Local || v == proxyproto.V1 && h.Destination.String() != ln.Addr().String() {
			t.Fatalf("%s: check sent %q = %+v", v, b, h)
		}
	}
}

// refusedAddr returns a loopback address where nothing listens.
func refusedAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := ln.Addr().String()
	ln.Close()
	return a
}
