// Package drainload measures what connections that wait for their output to
// drain cost a server while nothing drains, and how soon the server reads
// them again once their peer reads: `tidegate bench drain`.
//
// Each trial starts a fresh `tidegate serve` (the TLV echo server, session/tlv)
// from a given binary and
//
//   - samples its on-CPU time with no connection (the idle floor);
//   - opens the connections; each pipelines keep-alive echo requests and
//     never reads, so the server's output toward it backs up past the high
//     watermark and the server stops reading it. A connection counts as
//     stalled once its writes have made no progress for three probes in a
//     row with the server's receive window at zero; the trial then waits
//     until the server's own gauge (tidegate_tlv_paused_connections) counts
//     every connection paused;
//   - samples the server's on-CPU time and wake-ups (schedstat) over a
//     window in which nothing moves;
//   - resumes the connections one at a time while the others stay paused:
//     the client starts reading at t0 and writes the rest of its requests.
//     Resume latency is t0 to the moment the server reads the connection
//     again, seen by the client as 128 KiB more of its requests acknowledged
//     (the server's window only opens when the server reads). "After the
//     drain" is that moment less the moment the client had read every
//     response the server had surely written before it paused, a lower bound
//     found from the client's acknowledged bytes and the server socket's
//     receive queue (/proc/net/tcp) less one read buffer; a negative figure
//     means the server was reading again before the peer ran out of bytes;
//   - checks that every response came back byte for byte and in order, and
//     that the server still runs.
//
// Trials alternate: in repeat r the servers run in their order rotated by r.
// Figures are median [min–max] over the repeats. The tool fails (non-zero
// exit) when a connection lost, corrupted or reordered a byte, did not
// stall or did not resume, or a server died.
//
// The client and the server share the machine; during the CPU window the
// client is idle (every goroutine blocked), so the figure is the server's.
// Linux only: it reads TCP_INFO and /proc.
package drainload
