// Package reactor is tidegate's loop machinery over gnet: a server type,
// per-connection flow control, batched vectored writes, loop-local timers and
// a lossless close.
//
// gnet's event loops own the sockets. Every callback of a Handler runs on the
// loop that owns the connection, and so does everything a Handler calls on a
// Conn; nothing here takes a lock on the data path.
//
// The parts that need nothing of the loops are packages of their own: writev
// (Batch, and the reused iovec array), looptimer (the timer heap), drainwatch
// (the drain watcher's poll set and goroutine), chunkqueue (the half-close
// queue's pooled chunks), fdbudget (the process's descriptor budget),
// bufferbudget (the count the buffer budget bounds), workerpool (the dial
// goroutines), ipshare (the shared copies of the connections' IPs), metrics
// (the Prometheus collector), acceptor (the listening sockets and their accept
// goroutines, which ask the server only whether one more connection may be
// accepted and hand it each one to register on a loop: listen.go) and
// handoverwire (a live upgrade's messages and descriptors over a Unix socket).
//
// gnet offers no way to stop reading a connection and no callback when a
// connection's output has drained. This package adds both, with what it
// takes from gnet's internals kept in gnetcompat*.go, each reliance listed
// there with its guard and the gnet version it was checked against:
//
//   - Pausing changes the socket's interest set in the loop's own poller
//     (epoll_ctl on Linux, EV_DISABLE on kqueue). The poller descriptor is read
//     from gnet's unexported fields with reflect. Start reads it for every
//     loop and refuses to start unless each is an epoll instance (kqueue);
//     TestPollerFD fails loudly if that field path changes. gnet's poll_opt
//     build tag keeps a pointer where the rewrite writes the descriptor, so
//     building with it is refused (gnetcompat_pollopt.go).
//   - Drain is detected from the kernel: gnet only drains output on a
//     writable event, so the sockets whose drain is awaited sit in a second
//     epoll set (kqueue) per loop, edge-triggered for writability, and the
//     loop checks the ones that had room (drain.go). Nothing runs for them
//     while nothing drains. A waiter whose output is moving, or whose socket
//     is still writable after a check, is also polled every DrainPoll until
//     that stops, since the watcher's wake-up can lag on a busy machine.
//   - A close whose linger expires with output queued resets the connection
//     (SO_LINGER 0), so the peer never mistakes a truncated stream for a
//     complete one.
//
// # Accepting
//
// gnet ends its whole engine on any accept error but EAGAIN, EINTR,
// ECONNRESET and ECONNABORTED: one EMFILE closes every connection. Its main
// reactor also accepts until EAGAIN before any OnOpen runs, so a storm can
// use up the descriptors before a refusal frees one. So the Server owns its
// listening sockets (Go's net.Listen, which sets SO_REUSEADDR; SO_REUSEPORT
// only on request) and gnet gets a placeholder Unix socket in a private
// directory that is removed once the engine has booted, so nothing can reach
// gnet's accept path.
//
// One accept goroutine per listener (not per connection; package acceptor)
// admits connections while the server is under MaxConns and the
// process-wide descriptor budget
// (the soft RLIMIT_NOFILE, raised to the hard limit at start, less the
// descriptors open at start, less FDsPerConn for every accepted connection,
// less FDReserve). At a limit it stops calling accept, so new connections
// wait in the kernel's backlog as with HAProxy's maxconn, and it resumes when
// a connection closes. An accept error is counted by errno, logged at most
// once a second, and followed by a backoff (5 ms doubling to 1 s, or until a
// connection closes); it never stops the listener unless the socket itself is
// broken (EBADF, EINVAL, ENOTSOCK). Accepted connections are handed to the
// least loaded loop with gnet's Engine.Register, which duplicates the
// descriptor, registers the duplicate on that loop and closes the original.
// Measured against gnet's own accept path on 2 cores
// (benchmarks/results/2026-12-01-accept-cost.md): about 8 µs more server CPU
// per accepted connection (53 vs 45 µs for a connect, one request and a
// close, 1.17×) and 5 more system calls (17 vs 12), 0.90× the rate of
// short connections, once Go's keep-alive options are off. That is the
// price of an accept path that cannot end the engine, of MaxConns that
// leaves connections in the backlog, and of listeners that can be handed
// over or opened at run time; it is paid per connection, not per byte.
//
// # Threads and paused connections
//
// Go keeps every OS thread it starts, one for each goroutine ever held up
// in a system call at once; Start grows the descriptor table ahead, since
// each growth under a storm stalled every accept and dup on a new thread,
// and the drain watchers wait in Go's netpoller, not in epoll_wait. A
// flow-paused connection with nothing moving costs no wake-up: the budget's
// backlog scan skips queues the reactor owns and waiters whose socket is
// full, and the ticker Executes on a loop only when the loop's earliest
// timer is due or a waiter needs polling, so a loop whose connections are
// all paused wakes as an idle one does (push's subscribers add one look a
// second per loop, on whole seconds). docs/reactor.md (OS threads, Paused
// connections) has the measures.
package reactor
