// Package cluster shares the player state of several tidegate proxies
// through one Redis server: each proxy publishes its logged-in sessions and
// a heartbeat; a login is checked against the whole network (a duplicate
// name or UUID, the network-wide login rate of its address and session cap
// of its subnet) by one atomic Lua script; status pings can report the
// network's player count. It knows nothing of event loops: every Redis call
// runs on a small pool of the client's goroutines fed by a bounded queue,
// and answers come back through callbacks.
//
// When Redis is slow or down the proxy goes on by its own state: a call
// that fails, times out or finds the queue full is a fallback (counted by
// operation), Config.Failures of them in a row open a circuit breaker
// (logged once) under which no call is made, and a probe every Config.Retry
// closes it again (logged once), after which the proxy republishes every
// session it holds.
//
// Keys (every name starts with "tidegate:"; TTL is TTLFactor × heartbeat,
// refreshed by each heartbeat; times are Redis's clock):
//
//	tidegate:proxies            sorted set: proxy ID, scored by when its heartbeat expires (ms)
//	tidegate:proxy:ID           string, TTL: the proxy's process instance; there while it heartbeats
//	tidegate:sessions:ID        hash, TTL: session token -> record (see Session.Record)
//	tidegate:subnets:ID         hash, TTL: subnet -> the proxy's sessions in it (network-wide cap)
//	tidegate:name:NAME          string, TTL: ID/token of the session holding the lower-cased name
//	tidegate:uuid:UUID          string, TTL: ID/token of the session holding the UUID (32 hex digits)
//	tidegate:rate:login:ADDR    string, expires when full: the address's GCRA arrival time (ms)
//	tidegate:kick:ID            pub/sub channel: tokens of the proxy's sessions a newer login displaced
//
// A session token is the process instance (8 hex digits) and a sequence
// number; a live upgrade hands the token over with the session, and the
// new process, started without a reset, republishes it under the same ID.
package cluster
