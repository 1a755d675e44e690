// Package fdlimit brings a test process to its descriptor limit for a
// while: the next descriptors it opens fail with EMFILE, the way a process
// near its RLIMIT_NOFILE does. It works on Linux, whose RLIMIT_NOFILE type
// it uses; elsewhere Free skips the test.
package fdlimit

import (
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// Free lets the process open free more descriptors, by lowering the soft
// RLIMIT_NOFILE to just above the lowest free descriptor numbers, until the
// returned function (or the end of t) puts it back. The limit is the
// process's: every goroutine in it is held to it meanwhile.
func Free(t testing.TB, free int) (restore func()) {
	t.Helper()
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	limit, seen := 0, 0
	for fd := 0; fd < int(min(rl.Cur, 1<<20)); fd++ {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
			if seen == free {
				limit = fd
				break
			}
			seen++
		}
	}
	return lower(t, rl, limit)
}

// None lets the process open no descriptor at all until the returned
// function (or the end of t) puts the limit back: the soft RLIMIT_NOFILE
// goes to 0. Unlike Free(t, 0), a descriptor another goroutine closes
// meanwhile opens no room below the limit, so the next descriptor fails
// however busy the process is.
func None(t testing.TB) (restore func()) {
	t.Helper()
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	return lower(t, rl, 0)
}

// lower sets the soft limit to limit until the returned function (or the
// end of t) puts rl back.
func lower(t testing.TB, rl unix.Rlimit, limit int) (restore func()) {
	t.Helper()
	low := rl
	low.Cur = uint64(limit)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	restore = func() {
		once.Do(func() {
			if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
				t.Errorf("restoring RLIMIT_NOFILE: %v", err)
			}
		})
	}
	t.Cleanup(restore)
	return restore
}
