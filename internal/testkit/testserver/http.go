package testserver

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// Get fetches url without keeping the connection (so that a test leaves no
// idle connection behind) and returns the status, the body and the
// headers; it fails t when the request does.
func Get(t testing.TB, url string) (int, []byte, http.Header) {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", url, err)
	}
	return resp.StatusCode, body, resp.Header
}

// NonLoopbackIPv4 returns an IPv4 address of this machine that is neither
// loopback nor link-local, for a test of what is refused off loopback; it
// skips the test when the machine has none.
func NonLoopbackIPv4(t testing.TB) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skipf("listing the interfaces' addresses: %v", err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	t.Skip("this machine has no non-loopback IPv4 address to listen on")
	return ""
}
