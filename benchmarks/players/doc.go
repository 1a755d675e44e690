// Package players is the load client of the session benchmark's players
// workload: thousands of logged-in sessions, each sending small PLAY frames
// on a fixed schedule (open loop) and checking the echo or chunk-sized reply
// to each. Run measures one phase against one address; package session
// runs the phases against the targets and reports them.
//
// On Linux the replies are read by a few goroutines over epoll sets of
// duplicated sockets (players_read_linux.go), elsewhere by a goroutine per
// session (players_read_other.go).
package players
