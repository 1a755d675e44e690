//go:build poll_opt

package reactor

// Pausing a connection rewrites its registration in gnet's own epoll set with
// EpollEvent{Fd: fd}, the data word of gnet's default poller (on kqueue it
// modifies the knote that carries gnet's udata). Under gnet's poll_opt build
// tag that word holds a pointer that gnet dereferences on every event, so the
// rewrite would crash the process at the first pause (gnet's
// pkg/netpoll/poller_epoll_ultimate.go and poller_kqueue_ultimate.go, listed
// in gnetReliances, gnetcompat.go). The build is refused
// here instead: the undefined name below is the compiler's error message.
var _ = tidegate_reactor_does_not_support_gnet_poll_opt__build_without_the_poll_opt_tag
