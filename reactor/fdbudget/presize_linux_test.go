package fdbudget

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// fdTableSize returns the size of the process's descriptor table (FDSize in
// /proc/self/status).
func fdTableSize(t *testing.T) int {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "FDSize:"); ok {
			var n int
			if _, err := fmt.Sscan(v, &n); err != nil {
				t.Fatalf("FDSize %q: %v", v, err)
			}
			return n
		}
	}
	t.Fatal("no FDSize in /proc/self/status")
	return 0
}

// TestPresizeTable: the descriptor table holds n descriptors afterwards,
// capped at the soft limit, and no descriptor is left open.
func TestPresizeTable(t *testing.T) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	want := int(min(uint64(rl.Cur), 8192))
	if before := fdTableSize(t); before >= want {
		t.Skipf("the table holds %d descriptors already; the test needs one under %d", before, want)
	}
	open, err := OpenFDs()
	if err != nil {
		t.Fatal(err)
	}
	if err := PresizeTable(want); err != nil {
		t.Fatal(err)
	}
	if got := fdTableSize(t); got < want {
		t.Fatalf("descriptor table holds %d after PresizeTable(%d)", got, want)
	}
	if after, err := OpenFDs(); err != nil || after != open {
		t.Fatalf("open descriptors %d before, %d after (%v)", open, after, err)
	}
	if err := PresizeTable(Need(0, 2, 128, open)); err != nil {
		t.Fatalf("PresizeTable past the limit is capped, not an error: %v", err)
	}
	if got, want := Need(1000, 2, 128, 15), 2143; got != want {
		t.Fatalf("Need(1000, 2, 128, 15) = %d, want %d", got, want)
	}
}
