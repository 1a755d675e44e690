// Package connset keeps the connections a goroutine-per-connection server
// has open, so that closing the server closes every one of them: the load
// tools' echo backends and the Go peers (goserver, ssepeer, peers.GoRelay)
// each kept the same map, flag and lock for it.
package connset

import (
	"net"
	"sync"
)

// Set is the open connections of a server. Once closed it takes no more:
// Add and Go refuse a connection that arrives after Close, so that none
// outlives it. The zero Set is empty and open; a Set must not be copied
// after first use.
type Set struct {
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup // the goroutines of Go
}

// Add puts c in the set and reports true, or reports false, leaving c out
// (and open: the caller closes it), once Close has been called.
func (s *Set) Add(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addLocked(c)
}

func (s *Set) addLocked(c net.Conn) bool {
	if s.closed {
		return false
	}
	if s.conns == nil {
		s.conns = map[net.Conn]struct{}{}
	}
	s.conns[c] = struct{}{}
	return true
}

// Remove takes cs out of the set; it does not close them.
func (s *Set) Remove(cs ...net.Conn) {
	s.mu.Lock()
	for _, c := range cs {
		delete(s.conns, c)
	}
	s.mu.Unlock()
}

// Go puts c in the set and runs serve(c) on a goroutine of its own, which
// then takes c out of the set and closes it; Wait waits for these
// goroutines. Once Close has been called Go closes c instead and reports
// false.
func (s *Set) Go(c net.Conn, serve func(net.Conn)) bool {
	s.mu.Lock()
	if !s.addLocked(c) {
		s.mu.Unlock()
		c.Close()
		return false
	}
	// Counted under the lock that Close takes, so that a Wait after Close
	// sees every goroutine Go started.
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		defer func() {
			s.Remove(c)
			c.Close()
		}()
		serve(c)
	}()
	return true
}

// Closed reports whether Close has been called.
func (s *Set) Closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Each calls f on every connection in the set, holding the set's lock: f
// must not call the set's methods.
func (s *Set) Each(f func(net.Conn)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		f(c)
	}
}

// Close closes every connection in the set, which stays closed: Add and Go
// refuse connections from then on. It does not wait (see Wait).
func (s *Set) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
}

// Wait waits until every goroutine that Go started has returned.
func (s *Set) Wait() { s.wg.Wait() }
