// Package status builds and fetches the answers the proxy gives to status
// pings (server list pings, modern and pre-1.7) for the hosts it routes:
// a Reply from a backend's status JSON or from the configured offline
// answer, the exchange that fetches a backend's status, a group's Cache of
// them, the Refresher that runs the fetches and the Group that hands their
// result to the sessions waiting (a Waiter each), on their loops, and what
// a pre-1.7 ping's input calls for (ReadLegacy). The sessions themselves,
// and when a cache entry is used, are the proxy's (its status.go); this
// package holds what does not depend on them.
//
// The proxy answers the status pings for a routed host itself,
// modern (handshake with next state 1, Status Request, Ping) and pre-1.7
// (0xFE, see protocol/mc ParseLegacyPing), from a cache per group:
//
//   - While the group's cached status is younger than status.cache_ttl, a
//     ping is answered from it on its loop; nothing reaches a backend.
//   - Otherwise the ping waits (on its loop, as a callback: no goroutine per
//     connection) for a refresh: a goroutine of the proxy fetches the status
//     of one backend of the group that is up (of each, with sum_online),
//     stores it and hands it to every ping that waited, on its own loop.
//     There is at most one refresh per group in flight; pings arriving
//     meanwhile share it.
//   - A refresh that fails is cached for the TTL too, as the offline answer
//     (so a ping storm at a broken backend costs one fetch per TTL); it
//     changes no backend's health, which connects and active checks decide.
//   - When the group has no backend up (the proxy's probe.go), pings get
//     the offline answer (status.offline) at once.
//
// The Ping that follows is answered with its own payload by the proxy. A
// cached status keeps the backend's JSON as it was, version object included,
// unless status.protocol is client (each client gets its own protocol
// number) or sum_online replaces players.online.
package status
