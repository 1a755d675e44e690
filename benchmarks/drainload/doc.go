// Package drainload measures what connections that wait for their output to
// drain cost a server while nothing drains, and how soon the server reads
// them again once their peer reads: `tidegate-bench bench drain`.
//
// Each trial waits for the machine to be quiet (other programs on a shared
// machine can push the kernel into TCP memory pressure, where it drops
// segments and backs off for seconds), starts a fresh `tidegate serve` (the
// TLV echo server, session/tlvserver) from a given binary and
//
//   - samples its on-CPU time with no connection (the idle floor);
//   - opens the connections; each pipelines keep-alive echo requests and
//     never reads, so the server's output toward it backs up past the high
//     watermark and the server stops reading it. The client asks the kernel
//     (NETLINK_SOCK_DIAG) what the server's socket holds and has read: it
//     writes only while that socket's receive queue is short, and counts the
//     connection stalled once the server's read count has stayed put for
//     300 ms with input waiting (and still has 300 ms later; one the server
//     read on from is filled again). The trial then waits until the server's
//     own gauge (tidegate_tlv_paused_connections) counts every connection
//     paused. The clients advertise a 1460-byte MSS, which keeps the kernel
//     memory of 1,000 stalled connections under 1 GiB;
//   - samples the server's on-CPU time and wake-ups (schedstat) over a
//     window in which nothing moves;
//   - resumes the connections one at a time while the others stay paused:
//     the client starts reading at t0 and writes the rest of its requests.
//     Resume latency is t0 to the first client read after which the server's
//     read count has moved: the server reads the connection again. "After
//     the drain" is that moment less the moment the client had read every
//     response the server had written before it paused (what it had read
//     then, less one read buffer it may hold unanswered); a negative figure
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
// Linux only: it reads sock_diag and /proc.
package drainload
