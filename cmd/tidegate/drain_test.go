package main

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/waitfor"
)

// TestSIGTERMDrainsStreamingSessions: SIGTERM while 20 sessions stream
// through the proxy. The proxy stops accepting and /readyz fails at once,
// every session's stream arrives whole (sha256), and the process exits 0
// once they have ended, well before the drain timeout.
func TestSIGTERMDrainsStreamingSessions(t *testing.T) {
	const sessions, size = 20, 4 << 20
	listen, metrics := freePort(t), freePort(t)
	cfg := filepath.Join(t.TempDir(), "proxy.yaml")
	yaml := fmt.Sprintf("listeners: [{listen: %q, mode: raw, group: main}]\ngroups: {main: {backends: [{addr: %q}]}}\n"+
		"shutdown: {drain_timeout: 60s}\n"+
		// 20 sessions and the probes from 127.0.0.1 at once: past the
		// default connection burst.
		"limits: {connection_rate: 0, subnet_connection_rate: 0, max_sessions_per_subnet: 0}\n", listen, echoBackend(t))
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	ch := startChild(t, 0, "proxy", "--config", cfg, "--metrics-listen", metrics, "--log-level", "info")
	waitListening(t, ch, listen)

	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	started := make(chan struct{}, sessions)
	for i := 0; i < sessions; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			// Random bytes in bulk: a generator call per byte of 80 MiB
			// took seconds under the race detector.
			data := make([]byte, size)
			_, _ = rand.NewChaCha8([32]byte{byte(i), 3}).Read(data)
			c, err := net.DialTimeout("tcp", listen, 5*time.Second)
			if err != nil {
				errs <- err
				started <- struct{}{}
				return
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(60 * time.Second))
			go func() {
				// Write in pieces over about a second, so the stream is
				// mid-transfer when the signal comes.
				for off := 0; off < size; off += size / 32 {
					if _, err := c.Write(data[off : off+size/32]); err != nil {
						return
					}
					if off == 0 {
						started <- struct{}{}
					}
					time.Sleep(30 * time.Millisecond)
				}
			}()
			got := make([]byte, size)
			if _, err := io.ReadFull(c, got); err != nil {
				errs <- fmt.Errorf("session %d: %w", i, err)
				return
			}
			if sha256.Sum256(got) != sha256.Sum256(data) {
				errs <- fmt.Errorf("session %d: echo differs", i)
			}
		}(i)
	}
	for i := 0; i < sessions; i++ {
		<-started
	}
	if err := ch.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Readiness fails and new connections are refused while the sessions go on.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	waitfor.Check(t, "/readyz to fail after SIGTERM", func() error {
		resp, err := client.Get("http://" + metrics + "/readyz")
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || !bytes.Contains(body, []byte(`"draining":true`)) {
			return fmt.Errorf("%d %s", resp.StatusCode, body)
		}
		return nil
	})
	// The listener closes once it has handed over what its backlog holds
	// (a few milliseconds after readiness fails): from then on connections
	// are refused.
	waitfor.Within(t, 2*time.Second, "new connections to be refused in the drain", func() error {
		c, err := net.DialTimeout("tcp", listen, time.Second)
		if err != nil {
			return nil
		}
		c.Close()
		return errors.New("a new connection was accepted")
	})
	if !ch.running() {
		t.Fatalf("the proxy exited while sessions were streaming: %v", <-ch.done)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	ch.wantExit(t, 30*time.Second, "the end of every session")
}
