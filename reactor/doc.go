// Package reactor is tidegate's loop machinery over gnet: a server type,
// per-connection flow control, batched vectored writes, loop-local timers and
// a lossless close.
//
// gnet's event loops own the sockets. Every callback of a Handler runs on the
// loop that owns the connection, and so does everything a Handler calls on a
// Conn; nothing here takes a lock on the data path.
//
// gnet v2.9.7 offers no way to stop reading a connection and no callback when
// a connection's output has drained. This package adds both:
//
//   - Pausing changes the socket's interest set in the loop's own poller
//     (epoll_ctl on Linux, EV_DISABLE on kqueue). The poller descriptor is read
//     from gnet's unexported fields with reflect; TestPollerFD fails loudly if
//     that field path changes.
//   - Drain is detected by polling the connections that wait for it: on their
//     own callbacks and from the server's ticker every DrainPoll while any
//     connection waits.
package reactor
