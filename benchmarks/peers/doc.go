// Package peers runs the proxies tidegate is measured against, each as its
// own process, the same way for every kind: tidegate itself (Minecraft and
// raw listeners), Go's idiomatic io.Copy relay (goproxy, in this package),
// HAProxy in mode tcp (with and without splicing) and nginx's stream module.
//
// It writes their configuration files, starts them with the same core count,
// waits until they accept connections, and counts their system calls with
// perf stat. Their CPU and memory are read with benchmarks/procstat.
package peers
