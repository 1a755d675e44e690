// Package budgetload checks the proxy's process-wide buffer budget
// (limits.buffer_budget, see reactor/budget.go) from outside the process:
// N sessions flood a raw-mode tidegate proxy toward backend connections
// that do not read, so the proxy's output queues fill; the proxy's resident
// memory (VmRSS) is sampled until it stops growing, then every backend
// connection reads everything and each session's byte count and SHA-256
// are compared with what its client sent.
//
// The backend sets a small SO_RCVBUF on its sockets so that the backlog
// piles up in the proxy's user-space queues rather than in the backend's
// kernel receive buffers. Kernel socket memory (send and receive buffers
// of every socket) is not part of any process's RSS, so what the kernel
// holds is not measured here.
package budgetload
