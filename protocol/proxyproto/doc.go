// Package proxyproto decodes and encodes the header of the PROXY protocol,
// versions 1 (a text line) and 2 (binary), which a load balancer or proxy
// puts in front of a TCP connection to tell the next hop the addresses of
// the connection it relays.
//
// Parse works on whatever part of a connection's input has arrived: it
// reports a whole header and its length, that more bytes are needed, or an
// error as soon as the input cannot start a valid header. It does no I/O,
// keeps no state and does not allocate for a version 2 header or a
// version 1 header over IPv4. The header is at most MaxV1Length bytes in
// version 1 and at most Options.MaxV2Length (by default MaxV2Length) in
// version 2, so a caller that waits for more holds a bounded amount.
//
// AppendV1 and AppendV2 write headers, strconv style, onto a caller's slice.
//
// Errors are *Error values whose Reason is a stable label for metrics.
package proxyproto
