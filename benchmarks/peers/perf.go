package peers

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// SyscallEvent is the tracepoint perf counts: every system call entry.
const SyscallEvent = "raw_syscalls:sys_enter"

// SyscallCounter counts the system calls of a process it starts: the
// process runs under `perf stat -e raw_syscalls:sys_enter -D -1 --control
// fd:3,4`, with counting off until Enable, so only the measured interval is
// counted; perf writes the total when the process exits.
//
// perf starts the process itself because attaching to a running one
// (perf stat -p PID) counted nothing on this machine's kernel (6.18 with
// perf 6.1: every event "<not counted>"), while counters of a child perf
// started work. perf's tracepoint adds to the process's CPU time, so a
// process under a SyscallCounter is not used for CPU figures.
type SyscallCounter struct {
	ctl      *os.File // we write commands here
	ackFile  *os.File // perf acknowledges here
	ack      *bufio.Reader
	childCtl *os.File
	childAck *os.File
	out      string
}

// PerfAvailable reports whether perf is installed and counts
// raw_syscalls:sys_enter here; the error says why not.
func PerfAvailable() error {
	path, err := exec.LookPath("perf")
	if err != nil {
		return errors.New("perf is not installed (Debian: apt-get install linux-perf)")
	}
	out, err := exec.Command(path, "stat", "-x,", "-e", SyscallEvent, "--", "true").CombinedOutput()
	if err != nil {
		return fmt.Errorf("perf stat -e %s: %w: %s", SyscallEvent, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// NewSyscallCounter prepares the control pipes; perf's output file goes to dir.
func NewSyscallCounter(dir string) (*SyscallCounter, error) {
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("perf control pipe: %w", err)
	}
	ackR, ackW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		return nil, fmt.Errorf("perf ack pipe: %w", err)
	}
	return &SyscallCounter{
		ctl: ctlW, ackFile: ackR, ack: bufio.NewReader(ackR), childCtl: ctlR, childAck: ackW,
		out: filepath.Join(dir, fmt.Sprintf("perf-%d.csv", time.Now().UnixNano())),
	}, nil
}

// Command returns the perf command line that runs argv, and the files the
// child must get as descriptors 3 and 4 (harness.Supervisor).
func (s *SyscallCounter) Command(argv []string) ([]string, []*os.File) {
	pre := []string{"perf", "stat", "-x,", "-e", SyscallEvent, "-D", "-1", "--control", "fd:3,4", "-o", s.out, "--"}
	return append(pre, argv...), []*os.File{s.childCtl, s.childAck}
}

// Started closes the child's ends of the pipes in this process
// (harness.Supervisor).
func (s *SyscallCounter) Started() {
	s.childCtl.Close()
	s.childAck.Close()
}

// command sends "enable" or "disable" and waits for perf's acknowledgement.
func (s *SyscallCounter) command(what string) error {
	if _, err := s.ctl.WriteString(what + "\n"); err != nil {
		return fmt.Errorf("perf control %s: %w", what, err)
	}
	done := make(chan error, 1)
	go func() {
		line, err := s.ack.ReadString('\n')
		// perf 6.1 terminates each "ack\n" with a NUL, which leads the next line.
		if err == nil && strings.Trim(line, "\x00\n ") != "ack" {
			err = fmt.Errorf("perf answered %q", line)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("perf control %s: %w", what, err)
		}
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("perf control %s: no acknowledgement within 5s", what)
	}
}

// Enable starts counting.
func (s *SyscallCounter) Enable() error { return s.command("enable") }

// Disable stops counting.
func (s *SyscallCounter) Disable() error { return s.command("disable") }

// Count returns the system calls counted while enabled; call it after the
// process (and so perf) has exited.
func (s *SyscallCounter) Count() (int64, error) {
	s.ctl.Close()
	s.ackFile.Close()
	b, err := os.ReadFile(s.out)
	if err != nil {
		return 0, fmt.Errorf("perf stat output: %w", err)
	}
	os.Remove(s.out)
	return parsePerfCount(b)
}

// parsePerfCount finds the SyscallEvent line of perf stat -x, output.
func parsePerfCount(b []byte) (int64, error) {
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ",")
		if len(f) >= 3 && strings.TrimSpace(f[2]) == SyscallEvent {
			n, err := strconv.ParseInt(strings.TrimSpace(f[0]), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("perf stat count %q for %s: %w", f[0], SyscallEvent, err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("perf stat output has no %s line: %q", SyscallEvent, string(b))
}
