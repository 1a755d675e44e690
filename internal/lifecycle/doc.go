// Package lifecycle is a tidegate process's life from start to exit: the
// signals it catches (SIGINT and SIGTERM drain and stop it, SIGHUP reloads,
// SIGUSR2 upgrades it live), the drain that a stop begins with, the service
// manager's sd_notify protocol, the health registry behind /healthz and
// /readyz, the metrics listener those and /-/reload are served on (every
// route under one access policy, internal/adminaccess), and both
// sides of a live upgrade as far as the process goes (the listeners it
// inherits, the new binary it starts, the metrics listener it hands over;
// the sessions themselves move in session/proxy).
//
// It keeps no package-level state: a command creates a Process at its start
// and the values it needs (a Registry, a MetricsServer, an Upgrader), and
// everything lives in them. It knows nothing of command-line flags: the
// command converts them into the option structs here.
package lifecycle
