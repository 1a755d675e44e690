// Package soak runs the proxy (or serve, or push) for a long time under a
// mixed load and fails when anything it holds keeps growing:
// `tidegate-bench bench soak`.
//
// One run starts two fake backends (`tidegate backend`) and a `tidegate
// proxy` (one Minecraft listener, --metrics-listen, logs at warn in JSON
// to a file), all children of this process on loopback. The steady
// players' server address routes to one backend, which is never
// restarted; every other address (ChurnHost) goes to the churn backend.
// For Config.Duration it then runs
//
//   - steady players (package players): logged-in sessions sending small
//     PLAY frames on a fixed schedule; every reply is checked;
//   - churn: workers that log in, echo one frame (timing the login and the
//     echo: the latency figure), hold the session and leave;
//   - stalled readers: sessions that send a burst (Config.StalledBurst)
//     and read nothing for a hold behind a 4 KiB receive buffer, then read
//     all of it and check every byte. The default 256 KiB stays in the
//     kernel's socket buffers on Linux loopback; a burst of several MiB
//     makes the proxy queue it (tidegate_buffer_queued_bytes);
//   - half-closes: a frame, shutdown(SHUT_WR), then the echo and the end
//     of the stream;
//
// and, between samples, rewrites the configuration and sends SIGHUP every
// Config.ReloadEvery (the reload must show in
// tidegate_config_reloads_total{result="ok"}), restarts the churn backend
// every Config.RestartEvery (short-lived sessions cut meanwhile are counted
// apart, until a churn login works again) and sends one SIGUSR2 at
// Config.UpgradeAt (the old process must exit 0 and a new one answer
// /healthz; sampling goes on with it).
//
// Every Config.Interval it samples the serving process: RSS, descriptors
// and OS threads from /proc/PID, the live heap, goroutines and
// tidegate_buffer_queued_bytes from /metrics, and the 99th percentile of
// the churn latencies since the last sample. The samples of each process
// (segment) from Config.Warmup after its start are tested for a trend
// (TestTrend): a least-squares line whose growth over the samples exceeds
// the figure's Tolerance and whose slope is at least MinTStat standard
// errors above zero fails the run. So does any byte lost or wrong, any
// short-lived session failing outside a restart, an event that did not
// take effect, or a figure that no segment had enough samples to test.
//
// Descriptors: this tool holds two per steady player (its socket and the
// duplicate its epoll readers read) and one per short-lived session, the
// proxy two per session. Run raises the soft RLIMIT_NOFILE to the hard one
// (the proxy inherits it) and refuses a session count that does not fit,
// counting two per session in both: 9,000 sessions take 18,000 of 20,000,
// and the proxy's reserve and base leave some 1,800 spare. A short-lived
// session leaves in order (shutdown(SHUT_WR), then the end of the stream,
// which comes once the server has closed it), and its worker connects again
// only then: the sessions at once are the server's sessions at once, not
// those plus the ones a loaded server has yet to close. The samples carry
// the server's descriptor budget (tidegate_fd_accounted, accept pauses,
// refused metrics connections); accepting paused at the budget or a scrape
// refused for want of descriptors fails the run, since the sessions were
// sized to fit.
//
// Config.Server soaks the other servers the same way, sampled and tested
// alike, each with its own clients and no events (neither reloads):
//
//   - serve (`tidegate serve`): steady clients sending a pipeline of TLV
//     requests Rate times a second, every response checked and the sha256
//     of each connection's bytes compared both ways (tlvsteady.go); churn,
//     stalled readers and half-closes as for the proxy, in TLV;
//   - push (`tidegate push`): a publisher and steady TCP subscribers
//     (package pushload: every event, in order, to every subscriber), churn
//     subscribers (subscribe, two events in order, hold, leave) and slow
//     ones (a small receive buffer, nothing read for a hold, then every
//     event in order or reported dropped: pushclients.go).
package soak
