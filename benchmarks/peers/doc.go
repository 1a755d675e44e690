// Package peers runs the proxies tidegate is measured against, each as its
// own process, the same way for every kind: tidegate itself (Minecraft and
// raw listeners), Go's idiomatic io.Copy relay (goproxy, in this package),
// HAProxy in mode tcp (with and without splicing) and nginx's stream module.
//
// It writes their configuration files, starts them with the same core count,
// waits until they accept connections, and reads what a benchmark measures
// from outside a process: on-CPU time from /proc/PID/task/*/schedstat,
// resident memory, threads and open files of the process tree, and system
// calls counted by perf stat.
package peers
