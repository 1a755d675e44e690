// Package storm measures what a proxy does when a connection storm goes
// past its session limit and its descriptor limit while it holds sessions:
// `tidegate-bench bench storm`.
//
// Each trial starts a fresh proxy (tidegate-raw, HAProxy or nginx, package
// peers) in raw TCP mode in front of one echo backend (echo.Server, its own
// process), with the same session limit for all (tidegate max_sessions,
// HAProxy maxconn, nginx limit_conn) and the same descriptor limit (prlimit
// --nofile=N:N). It then
//
//   - opens the held sessions and checks one echo on each; each then echoes
//     a message unique to its session and sequence every interval, until
//     after the new-session check and once more;
//   - fires the storm: every storm connection connects, writes a unique
//     32-byte message and waits for the echo, within one deadline from the
//     start of its connect. Each has one outcome: accepted (echoed whole
//     and right), refused (connect refused, or reset or closed before the
//     echo was complete), timed out (no connection or no complete echo by
//     the deadline) or errored (a wrong echo or a client fault). Accepted
//     connections stay open until the last outcome, holding their place;
//   - reads the proxy's on-CPU time (schedstat) before firing and after the
//     last outcome;
//   - closes the storm's connections and checks that the proxy process is
//     still running and that a new session is served (with retries for a
//     few seconds);
//   - stops the held sessions and counts those lost: any that failed an
//     echo at any point.
//
// Accept latency is, for accepted storm connections, the time from the
// start of the connect to the first echoed byte: the proxy sends it only
// after it accepted the client, connected the backend and relayed both
// ways. Connect completion alone is answered by the kernel from the
// listener's backlog before the proxy accepts, so it is reported apart.
//
// Trials alternate: in repeat r the targets run in their order rotated by
// r. Figures are reported as median [min–max] over the repeats. A run fails
// (the command exits non-zero) when a held session was lost, a proxy died
// or stopped serving, a storm connection errored, or a trial could not run.
//
// One client process holds the held sessions and fires the storm: it needs
// a descriptor per connection (held + storm, checked against its limit
// before the run) and spreads them over several loopback source addresses
// with IP_BIND_ADDRESS_NO_PORT, so that neither its descriptors nor its
// ephemeral ports are the limit; on two cores more client processes would
// add no CPU.
package storm
