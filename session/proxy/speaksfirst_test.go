package proxy

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// slowEchoBackend echoes every connection after holding its accept back by
// delay, so that clients have sent a lot before their backend connects.
func slowEchoBackend(t *testing.T, delay time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			time.Sleep(delay)
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// TestRawClientSpeaksFirst: in raw mode 50 clients each send 1 MiB at once
// after connecting, while their backend connects slowly. What arrives before
// the backend is up is held under flow control (reading stops at
// preroute_bytes), never answered with a reset; every byte is echoed back.
func TestRawClientSpeaksFirst(t *testing.T) {
	const sessions, size = 50, 1 << 20
	// handshake_timeout (until the backend is up) is raised from 5 s: on a
	// loaded 2-core machine 50 dials with 1 MiB each can take longer, and a
	// timeout is not what this test is about; a reset must not come from
	// holding the bytes.
	p, addr := startProxy(t, fmt.Sprintf(`
listeners: [{listen: "127.0.0.1:0", mode: raw, group: main}]
groups: {main: {backends: [{addr: %q}]}}
limits: {high_watermark: 262144, low_watermark: 131072, handshake_timeout: 60s}
`, slowEchoBackend(t, 2*time.Millisecond)))
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for i := 0; i < sessions; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			data, _ := payload(size, uint64(100+i))
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(60 * time.Second))
			werr := make(chan error, 1)
			go func() { _, err := c.Write(data); werr <- err }()
			got := make([]byte, size)
			if _, err := io.ReadFull(c, got); err != nil {
				errs <- fmt.Errorf("session %d: echo: %w", i, err)
				return
			}
			if err := <-werr; err != nil {
				errs <- fmt.Errorf("session %d: send: %w", i, err)
				return
			}
			if !bytes.Equal(got, data) {
				errs <- fmt.Errorf("session %d: echo differs", i)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	failed := 0
	var first error
	for err := range errs {
		if first == nil {
			first = err
		}
		failed++
	}
	if failed > 0 {
		t.Fatalf("%d of %d sessions failed; first: %v; proxy refusals %v", failed, sessions, first, p.Stats().Rejected)
	}
}
