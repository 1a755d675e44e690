// Package acceptload measures what accepting a connection costs a TLV
// server (`tidegate serve`): `tidegate-bench bench accept`.
//
// The load (Run) is one short connection after another: P workers each
// loop connect → write one small request without the keep-alive bit → read
// the whole response → read EOF (the server closes after answering such a
// request) → close, until N connections have been made. Every response is
// checked byte for byte against the request, whose body is unique to its
// connection; any error, wrong byte, extra byte or timeout is counted, and
// a run with any of them fails. Latency is from the start of the connect to
// the last byte of the response.
//
// Compare starts each given server binary as `BIN serve --listen ADDR
// --loops L` on a port it picked (a fresh process per trial), warms it up,
// reads the server's on-CPU time from /proc/PID/task/*/schedstat before
// and after the measured run and divides by N: the server's CPU per
// accepted connection, its whole life from accept to close. The binaries
// alternate over the repeats (the order rotated by one each repeat), and
// each figure is reported as median [min–max] with the ratio of each
// binary's median to the first one's. Optionally as many more trials per
// binary run the server under perf to count its system calls per
// connection (perf adds to the CPU time, so their CPU is not reported).
package acceptload
