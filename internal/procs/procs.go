// Package procs finds processes by their command line, for tests and
// benchmarks that must leave none of the processes they started running
// (a proxy a failed upgrade left, Chromium's helpers). It reads /proc,
// so outside Linux it finds nothing and tells only whether a pid exists.
package procs
