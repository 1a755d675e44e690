// Package testserver starts the servers that tests run against, in process
// and stopped when the test ends: tidegate's TLV and push servers, its fake
// game server, and fake servers whose behaviour a test writes.
package testserver

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/mcbackend"
	"github.com/tidegate/tidegate/session/pushserver"
	"github.com/tidegate/tidegate/session/tlvserver"
)

// stopTimeout bounds a server's stop at the end of a test.
const stopTimeout = 5 * time.Second

// Conns accepts connections on a loopback port and runs serve on each in
// its own goroutine (a test server, not a measured one). When the test ends
// it closes the listener and every connection still open and waits for the
// goroutines, so that a test leaves nothing running. It returns the address.
func Conns(t testing.TB, serve func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { mu.Lock(); delete(conns, c); mu.Unlock(); c.Close() }()
				serve(c)
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// start runs a server's Start, failing t if it fails, and its Stop with d
// to stop in when the test ends; onStopErr, if not nil, is given Stop's
// error.
func start(t testing.TB, start func() error, stop func(context.Context) error, d time.Duration, onStopErr func(error)) {
	t.Helper()
	if err := start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		if err := stop(ctx); err != nil && onStopErr != nil {
			onStopErr(err)
		}
	})
}

// TLV starts tidegate's TLV echo server (what `tidegate serve` runs) with
// loops event loops and returns its address.
func TLV(t testing.TB, loops int) string {
	t.Helper()
	srv, err := tlvserver.New(tlvserver.Config{Reactor: reactor.Config{Addrs: []string{"127.0.0.1:0"}, Loops: loops}})
	if err != nil {
		t.Fatal(err)
	}
	start(t, srv.Start, srv.Stop, stopTimeout, func(err error) { t.Errorf("stopping the TLV server: %v", err) })
	return srv.Addr().String()
}

// Push starts tidegate's push server on ephemeral loopback ports with two
// subscriber loops, after mod changes its default configuration, and
// returns it with its publish and subscribe addresses.
func Push(t testing.TB, mod func(*pushserver.Config)) (srv *pushserver.Server, pub, sub string) {
	t.Helper()
	cfg := pushserver.DefaultConfig()
	cfg.PublishAddr, cfg.SubscribeAddr, cfg.Loops = "tcp://127.0.0.1:0", "tcp://127.0.0.1:0", 2
	if mod != nil {
		mod(&cfg)
	}
	srv, err := pushserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	start(t, srv.Start, srv.Stop, stopTimeout, nil)
	pa, err := srv.PublishAddr()
	if err != nil {
		t.Fatal(err)
	}
	sa, err := srv.SubscribeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return srv, pa.String(), sa.String()
}

// MCBackend starts tidegate's fake game server (session/mcbackend) with cfg
// on a loopback port and one loop, for clients to talk to directly or
// through a proxy; it stops when the test ends. It returns the server and
// its address.
func MCBackend(t testing.TB, cfg mcbackend.Config) (*mcbackend.Server, string) {
	t.Helper()
	cfg.Reactor.Addrs = []string{"tcp://127.0.0.1:0"}
	cfg.Reactor.Loops = 1
	b, err := mcbackend.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	start(t, b.Start, b.Stop, 10*time.Second, nil)
	a, err := b.Addr(0)
	if err != nil {
		t.Fatal(err)
	}
	return b, a.String()
}
