// Package session is the paired session benchmark: Minecraft clients log in
// offline (protocol 5, 1.7.10) and echo PLAY packets, once straight to the
// fake backend (the direct phase) and once through a proxy (the proxy phase),
// in alternating order, as MoonBridge's ProxySessionBenchmark does.
//
// Each PLAY packet body carries the packet ID 0x03, the connection's number,
// the packet's sequence number and a payload that is a function of both; every
// echo is checked against what was sent, and mismatches are counted as errors.
//
// The client runs one goroutine per connection with blocking reads and
// writes: with the 4 connections of the documented workloads, Go's netpoller
// serves them much as an event loop would (a read that would block parks the
// goroutine on epoll), and no hand-off between goroutines sits on the echo
// path. A connection writes its next burst from the goroutine that read the
// echo that completed the previous one.
//
// Figures for the proxy come from outside its process (/proc and perf), so
// every proxy is measured the same way; see package peers.
package session
