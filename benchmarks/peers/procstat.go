package peers

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ProcSample is what /proc tells about a set of processes at one moment.
type ProcSample struct {
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

// SampleProcs reads a ProcSample for pids from /proc; it fails where /proc
// is missing (macOS, FreeBSD without linprocfs) or a process has exited.
func SampleProcs(pids []int) (ProcSample, error) {
	var s ProcSample
	for _, pid := range pids {
		cpu, slices, err := schedCPU(pid)
		if err != nil {
			return ProcSample{}, err
		}
		s.CPUNs += cpu
		s.Slices += slices
		rss, threads, err := statusOf(pid)
		if err != nil {
			return ProcSample{}, err
		}
		s.RSSBytes += rss
		s.Threads += threads
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			return ProcSample{}, fmt.Errorf("open files of pid %d: %w", pid, err)
		}
		s.FDs += len(fds)
	}
	return s, nil
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
			kb, _ := strconv.ParseInt(fields[0], 10, 64)
			rss = kb << 10
		case "Threads":
			threads, _ = strconv.Atoi(fields[0])
		}
	}
	return rss, threads, sc.Err()
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

// MachineCPU reads the whole machine's CPU time from the first line of
// /proc/stat, in nanoseconds: busy (user, nice, system, irq, softirq and
// steal) and idle (idle and iowait). Its resolution is the kernel's clock
// tick (USER_HZ, 100 a second on Linux), so it suits intervals of seconds.
// The growth of busy beyond what the measured processes used is other load.
func MachineCPU() (busyNs, idleNs int64, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, fmt.Errorf("machine CPU: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("machine CPU: /proc/stat starts with %q, want a cpu line of at least 8 counters", line)
	}
	const tickNs = int64(1e9 / 100) // USER_HZ is 100 on every Linux architecture Go runs on
	var v [8]int64
	for i := range v {
		if v[i], err = strconv.ParseInt(f[i+1], 10, 64); err != nil {
			return 0, 0, fmt.Errorf("machine CPU: /proc/stat counter %d %q: %w", i+1, f[i+1], err)
		}
	}
	// user nice system idle iowait irq softirq steal
	busy := v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
	idle := v[3] + v[4]
	return busy * tickNs, idle * tickNs, nil
}
