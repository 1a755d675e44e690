// Package drainwatch tells a reactor loop when the sockets whose output it
// waits for have room again. gnet says nothing when a connection's output
// drains, and it drains only on a writable event; so each loop has a
// Watcher: a second epoll set (kqueue on the BSDs and macOS) holding the
// waiting sockets edge-triggered for writability, and a goroutine waiting
// on it, which queues the descriptors that had room and tells the loop
// (Notifier.Writable). The loop takes them with Pop, on its own goroutine.
// While nothing drains, nothing runs; on Linux the goroutine waits in Go's
// netpoller, so that it holds no OS thread meanwhile (the BSDs' blocks in
// kevent). How the loop acts on them is the reactor's (reactor/drain.go).
package drainwatch

// Notifier is how a Watcher reaches the loop it serves. Its methods run on
// the watcher's goroutine and must not block.
type Notifier interface {
	// Writable runs after the watcher queued descriptors whose sockets had
	// room; the loop takes them with Pop.
	Writable()
	// Failed runs when the watcher cannot go on; its goroutine then ends,
	// and the loop must find drains another way (by polling).
	Failed(err error)
}
