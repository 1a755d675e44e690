package proxy

import (
	"io"
	"net"
	"testing"
	"time"
)

// answerBackend answers each connection: it reads to EOF when halfClose
// (the client's FIN), else reads one request of n bytes, writes n bytes back
// and shuts down its write side.
func answerBackend(b *testing.B, n int, halfClose bool) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		buf := make([]byte, n)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if halfClose {
				_, err = io.ReadFull(c, buf)
				if err == nil {
					_, err = io.Copy(io.Discard, c)
				}
			} else {
				_, err = io.ReadFull(c, buf)
			}
			if err == nil {
				_, _ = c.Write(buf)
			}
			_ = c.(*net.TCPConn).CloseWrite()
			_, _ = io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// BenchmarkSessionClose compares a raw session that ends with the client's
// half-close (request, FIN, answer, FIN) with one that ends with a plain
// close after the answer: what relaying the half-close costs per session.
func BenchmarkSessionClose(b *testing.B) {
	for _, tc := range []struct {
		name      string
		halfClose bool
	}{{"full-close", false}, {"half-close", true}} {
		b.Run(tc.name, func(b *testing.B) {
			const n = 1024
			_, addr := startProxy(b, rawConfig(answerBackend(b, n, tc.halfClose)))
			req := make([]byte, n)
			resp := make([]byte, n)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c, err := net.DialTimeout("tcp", addr, 5*time.Second)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := c.Write(req); err != nil {
					b.Fatal(err)
				}
				if tc.halfClose {
					_ = c.(*net.TCPConn).CloseWrite()
				}
				if _, err := io.ReadFull(c, resp); err != nil {
					b.Fatal(err)
				}
				if tc.halfClose {
					if rest, err := io.ReadAll(c); err != nil || len(rest) != 0 {
						b.Fatalf("after the answer: %d bytes, %v", len(rest), err)
					}
				}
				c.Close()
			}
		})
	}
}
