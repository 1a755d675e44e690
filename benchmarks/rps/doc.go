// Package rps is the TLV load generator of the design document
// seeds/003 (a Java NIO TLV server's benchmark): clients, each with one
// keep-alive connection, send deterministic requests and check every
// response (type, keep-alive bit, length and content), and the run reports
// requests per second (successes / wall time), latency percentiles from an
// HdrHistogram, errors, timeouts and per-client calls per second.
//
// Unlike the document's generator (a thread per client, strictly one request
// in flight), the clients run on gnet's event loops, several connections per
// loop, so that the generator is not what limits the server: each connection
// keeps Config.Pipeline requests in flight and sends the next one as each
// response arrives, all the requests of one read in one write. Pipeline 1 is
// the document's strict request/response. Reply timeouts are found by
// scanning each loop's connections a few times per timeout, on the loop,
// rather than with a timer per request.
//
// Spawn starts the server under test (tidegate's event-loop TLV server or
// the goroutine-per-connection peer in benchmarks/goserver), in this process
// or as a child process whose memory and CPU are measured on their own, and
// Compare runs both side by side in alternating order.
package rps
