package reactor

import (
	"context"
	"net"
	"testing"
	"time"
)

// setHook sets a test seam for the test's length.
func setHook[F any](t *testing.T, hook *F, f F) {
	t.Helper()
	*hook = f
	t.Cleanup(func() { var zero F; *hook = zero })
}

// TestAddListenerRacingStop: a listener that a reload adds while the server
// stops (Stop for SIGTERM's end, Shutdown for its drain, ReleaseListeners for
// a live upgrade) is either refused or closed with the others: the stop
// returns in time, nothing panics, and no socket is left listening.
func TestAddListenerRacingStop(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop func(s *Server) error
	}{
		{"Stop", func(s *Server) error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return s.Stop(ctx)
		}},
		{"Shutdown", func(s *Server) error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return s.Shutdown(ctx)
		}},
		{"ReleaseListeners", func(s *Server) error { s.ReleaseListeners(); return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := startServer(t, Config{Addrs: []string{"tcp://127.0.0.1:0"}, Loops: 1}, &echoHandler{})
			stopped := make(chan error, 1)
			setHook(t, &testHookListenerBound, func() {
				go func() { stopped <- tc.stop(s) }()
				// Unfixed, the stop closes stopAccept meanwhile and goes on;
				// fixed, it waits for AddListener, and this wait runs out.
				select {
				case <-s.stopAccept:
				case <-time.After(300 * time.Millisecond):
				}
			})
			idx, addErr := s.AddListener("tcp://127.0.0.1:0")
			var addr net.Addr
			if addErr == nil {
				var err error
				if addr, err = s.Addr(idx); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case err := <-stopped:
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s did not return", tc.name)
			}
			if addErr != nil {
				return // refused: nothing was opened
			}
			if c, err := net.DialTimeout("tcp", addr.String(), time.Second); err == nil {
				c.Close()
				t.Fatalf("the listener added while the server stopped still listens on %s", addr)
			}
		})
	}
}
