// Package upgradeload measures a live upgrade of `tidegate proxy` under
// load: `tidegate-bench bench upgrade`.
//
// Each trial starts a fresh proxy (a raw listener, one backend group, no
// session limit, no idle timeout, a 60 s drain, --metrics-listen on, logs
// at info in JSON to a file that is kept) in front of an echo backend that
// runs in this process. It then
//
//   - opens N sessions through the proxy, a few at a time, each open once
//     the echo of its first message is back; each then sends a 16-byte
//     message every interval (session id, sequence number and a check word derived
//     from both) and the backend echoes it. The client checks every echo:
//     it must be the next sequence number of its own session, unchanged. A
//     lost, duplicated, reordered or corrupted echo, a session that ends or
//     errors, or a write that fails is a failure of that session;
//   - after a warm-up, keeps a steady window (the baseline), then sends
//     SIGUSR2 to the proxy and starts the upgrade window, which lasts until
//     the old process has exited and a settle time more;
//   - measures the hand-over time, from the signal until the old process
//     exits (it is this tool's child), and reads the old process's own
//     figure from its log line "upgrade: sessions handed over";
//   - finds the new process by the "pid" of GET /healthz on the metrics
//     address (the new process serves it on the listener it inherited),
//     and checks that it accepts a new session;
//   - stops sending, waits for every echo, checks that every session got
//     all of its echoes and was served after the old process exited (kept),
//     closes the sessions, sends SIGTERM to the new process and waits for it
//     to be gone. It is not this tool's child but the old proxy's: on Linux
//     this tool makes itself a child subreaper (PR_SET_CHILD_SUBREAPER), so
//     that the new process becomes its child when the old one exits and its
//     exit status can be read; elsewhere it waits until the pid is gone.
//
// The figure of each window is, for every session, the longest time
// between two consecutive echo arrivals whose second arrival falls in the
// window (and, for a session still waiting when the window closes, the
// time since its last echo); nothing is subtracted, so a session that was
// never paused shows about one interval. A trial reports the greatest of
// these over the sessions, their 99th percentile and their median (nearest
// rank), for the upgrade window and for the baseline.
//
// The tool's own sends are timed too: the send lag of a window is how late
// the latest send of a slot was against its schedule. A lag near the gaps
// would mean that the tool, not the proxy, made them.
//
// Descriptors: this tool holds two per session (its client socket and the
// backend's), the proxy two per session and its reserve. Run raises this
// process's soft RLIMIT_NOFILE to the hard limit (explicitly, so that the
// proxy started from here inherits the raised limit) and refuses a session
// count that does not fit in either.
//
// A run fails (the command exits non-zero) when any session failed, the old
// process did not exit 0 or the new one did not exit after SIGTERM, no new
// process answered /healthz, a new session was not served, or the proxy
// logged an error or a hand-over that left sessions behind.
package upgradeload
