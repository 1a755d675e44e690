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
	// Runs is how many times those threads were switched onto a CPU (field
	// 3 of the same files): wake-ups, for a process that mostly sleeps.
	Runs int64
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
		cpu, runs, err := schedCPU(pid)
		if err != nil {
			return ProcSample{}, err
		}
		s.CPUNs += cpu
		s.Runs += runs
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

// schedCPU sums the on-CPU nanoseconds and the run counts of pid's threads.
func schedCPU(pid int) (cpu, runs int64, err error) {
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
			return 0, 0, fmt.Errorf("%s: %q: want 3 fields", p, b)
		}
		n, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: field 1 %q: %w", p, f[0], err)
		}
		r, err := strconv.ParseInt(string(f[2]), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: field 3 %q: %w", p, f[2], err)
		}
		cpu += n
		runs += r
	}
	return cpu, runs, nil
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
