// Package procstat is the one reader of process and machine CPU and memory
// that every load generator uses, so that "server CPU" means the same in
// each report: on-CPU nanoseconds from /proc/PID/task/*/schedstat (the
// scheduler's own clock, not 10 ms ticks), resident memory, threads and
// open files from /proc, this process's CPU from getrusage, and the whole
// machine's from /proc/stat. It reads Linux's /proc; elsewhere the readers
// of other processes fail, which the tools report rather than guess.
package procstat

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Sample is what /proc tells about a set of processes at one moment.
type Sample struct {
	// CPUNs is the on-CPU time of every thread so far: the sum of field 1
	// of /proc/PID/task/*/schedstat. Threads that have exited are missing.
	CPUNs int64
	// Slices is how many times those threads were put on a CPU: the sum of
	// field 3 of the same files. A thread that sleeps and is woken takes one
	// more, so its growth over a run counts wake-ups (hand-offs between
	// threads, waits in epoll or futex) as well as preemptions.
	Slices int64
	// RSSBytes is the sum of VmRSS.
	RSSBytes int64
	// Threads is the sum of the Threads field of /proc/PID/status (OS threads).
	Threads int
	// FDs is the number of open file descriptors (entries of /proc/PID/fd).
	FDs int
}

// Read reads a Sample for pids from /proc; it fails where /proc is missing
// (macOS, FreeBSD without linprocfs) or a process has exited.
func Read(pids []int) (Sample, error) {
	var s Sample
	for _, pid := range pids {
		cpu, slices, err := schedCPU(pid)
		if err != nil {
			return Sample{}, err
		}
		s.CPUNs += cpu
		s.Slices += slices
		rss, threads, err := statusOf(pid)
		if err != nil {
			return Sample{}, err
		}
		s.RSSBytes += rss
		s.Threads += threads
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			return Sample{}, fmt.Errorf("open files of pid %d: %w", pid, err)
		}
		s.FDs += len(fds)
	}
	return s, nil
}

// CPU returns pid's time on CPU so far, summed over its threads (field 1 of
// /proc/PID/task/*/schedstat, nanoseconds). Threads that have exited are
// missing from the sum, so it suits processes that keep their threads.
func CPU(pid int) (time.Duration, error) {
	ns, _, err := schedCPU(pid)
	return time.Duration(ns), err
}

// RSS returns pid's resident set size in bytes (VmRSS of /proc/PID/status).
func RSS(pid int) (int64, error) {
	rss, _, err := statusOf(pid)
	return rss, err
}

// SelfCPU returns this process's CPU time so far, user plus system, from
// getrusage (the same scheduler clock as schedstat on Linux, at microsecond
// resolution; it works where /proc is missing too).
func SelfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage of this process: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// schedCPU sums the on-CPU nanoseconds (field 1) and the run slices
// (field 3) of pid's threads.
func schedCPU(pid int) (cpuNs, slices int64, err error) {
	paths, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(paths) == 0 {
		return 0, 0, fmt.Errorf("schedstat of pid %d: no /proc/%d/task/*/schedstat (needs Linux with schedstats)", pid, pid)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the thread exited between glob and read
		}
		f := bytes.Fields(b)
		if len(f) < 3 {
			return 0, 0, fmt.Errorf("%s: %d fields %q, want 3", p, len(f), b)
		}
		n, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: field 1 %q: %w", p, f[0], err)
		}
		k, err := strconv.ParseInt(string(f[2]), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: field 3 %q: %w", p, f[2], err)
		}
		cpuNs += n
		slices += k
	}
	return cpuNs, slices, nil
}

// statusOf reads VmRSS (bytes) and Threads from /proc/PID/status.
func statusOf(pid int) (rss int64, threads int, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("status of pid %d: %w", pid, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		switch k {
		case "VmRSS":
			kb, err := strconv.ParseInt(fields[0], 10, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("status of pid %d: VmRSS %q: %w", pid, fields[0], err)
			}
			rss = kb << 10
		case "Threads":
			if threads, err = strconv.Atoi(fields[0]); err != nil {
				return 0, 0, fmt.Errorf("status of pid %d: Threads %q: %w", pid, fields[0], err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, fmt.Errorf("status of pid %d: %w", pid, err)
	}
	if threads == 0 {
		return 0, 0, fmt.Errorf("status of pid %d: no Threads line (a zombie, or not Linux's /proc)", pid)
	}
	return rss, threads, nil
}

// ProcessTree returns pid and its descendants, found by scanning the parent
// field of /proc/*/stat (nginx runs its workers as children of the master).
func ProcessTree(pid int) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("listing /proc: %w", err)
	}
	children := map[int][]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command name may hold spaces and parentheses: fields start after the last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(string(f[1]))
		children[ppid] = append(children[ppid], p)
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out, nil
}

// TCPOutSegs reads OutSegs from the Tcp line of /proc/PID/net/snmp: the TCP
// segments sent in pid's network namespace (on one host without namespaces,
// every process's segments, not only pid's).
func TCPOutSegs(pid int) (int64, error) {
	path := fmt.Sprintf("/proc/%d/net/snmp", pid)
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", path, err)
	}
	var header []string
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "Tcp:") {
			continue
		}
		f := strings.Fields(line)
		if header == nil {
			header = f
			continue
		}
		for i, name := range header {
			if name == "OutSegs" && i < len(f) {
				return strconv.ParseInt(f[i], 10, 64)
			}
		}
	}
	return 0, fmt.Errorf("%s: no Tcp OutSegs", path)
}

// Machine is the whole machine's CPU time so far, all cores, from the first
// line of /proc/stat, in nanoseconds. Its resolution is the kernel's clock
// tick (USER_HZ, 100 a second in Linux's ABI on every architecture), so it
// suits intervals of seconds. The growth of a figure beyond what the
// measured processes used is other load.
type Machine struct {
	// Busy is user, nice, system, irq, softirq and steal time.
	Busy int64
	// Idle is idle and iowait time.
	Idle int64
	// Processes is user, nice and system time: the part of Busy spent
	// running processes. Interrupt and softirq time is left out, as
	// loopback traffic's own packet processing lands there, whoever sends it.
	Processes int64
}

// MachineCPU reads Machine from /proc/stat.
func MachineCPU() (Machine, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return Machine{}, fmt.Errorf("machine CPU: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return Machine{}, fmt.Errorf("machine CPU: /proc/stat starts with %q, want a cpu line of at least 8 counters", line)
	}
	const tickNs = int64(1e9 / 100) // USER_HZ
	var v [8]int64
	for i := range v {
		if v[i], err = strconv.ParseInt(f[i+1], 10, 64); err != nil {
			return Machine{}, fmt.Errorf("machine CPU: /proc/stat counter %d %q: %w", i+1, f[i+1], err)
		}
		v[i] *= tickNs
	}
	// user nice system idle iowait irq softirq steal
	return Machine{
		Busy:      v[0] + v[1] + v[2] + v[5] + v[6] + v[7],
		Idle:      v[3] + v[4],
		Processes: v[0] + v[1] + v[2],
	}, nil
}
