package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/procs"
)

func TestCellAndYesNo(t *testing.T) {
	for _, c := range []struct {
		in    string
		limit int
		want  string
	}{{"", 0, "–"}, {"a|b\nc", 0, "a/b c"}, {"abcdef", 3, "abc..."}, {"abc", 3, "abc"}} {
		if got := Cell(c.in, c.limit); got != c.want {
			t.Errorf("Cell(%q, %d) = %q, want %q", c.in, c.limit, got, c.want)
		}
	}
	if YesNo(true) != "yes" || YesNo(false) != "no" {
		t.Errorf("YesNo: %q, %q", YesNo(true), YesNo(false))
	}
}

func TestBinaryMetaRevisionNote(t *testing.T) {
	if got := (BinaryMeta{}).RevisionNote("proxy"); got != " (tool)" {
		t.Errorf("without a version: %q", got)
	}
	if got := (BinaryMeta{ProxyVersion: "v1"}).RevisionNote("server"); got != " (tool); server binary: v1" {
		t.Errorf("with a version: %q", got)
	}
}

func TestHealthPIDReadsThePidWhateverTheStatus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"pid": 4242, "status": "draining"}`))
	}))
	defer srv.Close()
	c := NoKeepAlive(2 * time.Second)
	defer c.CloseIdleConnections()
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, a := range []string{addr, srv.URL, srv.URL + "/"} {
		pid, status, err := HealthPID(context.Background(), c, a)
		if err != nil || pid != 4242 || status != http.StatusServiceUnavailable {
			t.Errorf("HealthPID(%s) = %d, %d, %v; want 4242, 503, nil", a, pid, status, err)
		}
	}
	empty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`{}`)) }))
	defer empty.Close()
	if _, _, err := HealthPID(context.Background(), c, empty.URL); err == nil || !strings.Contains(err.Error(), "has no pid") {
		t.Errorf("a body without a pid: %v, want an error naming it", err)
	}
}

func TestStopPIDEndsAChildAndReadsItsExit(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the exit through wait4 on Linux")
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep program:", err)
	}
	pid := cmd.Process.Pid
	status, early, err := StopPID(pid, 10*time.Second)
	if err != nil || early || status != "signal: terminated" {
		t.Fatalf("StopPID = %q, %v, %v; want signal: terminated", status, early, err)
	}
	if procs.Alive(pid) {
		t.Errorf("pid %d still alive", pid)
	}
	if _, early, err := StopPID(pid, time.Second); err != nil || !early {
		t.Errorf("StopPID of a gone pid = early %v, %v; want early, nil", early, err)
	}
}

func TestKillMarkedKillsOnlyTheMarked(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("finds processes through /proc")
	}
	marker := "/tmp/harness-kill-marked-" + time.Now().Format("150405.000000000")
	marked := exec.Command("sh", "-c", "sleep 60 # "+marker)
	other := exec.Command("sleep", "61")
	for _, c := range []*exec.Cmd{marked, other} {
		if err := c.Start(); err != nil {
			t.Skip("no sh or sleep:", err)
		}
	}
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	pids := KillMarked(marker)
	if len(pids) != 1 || pids[0] != marked.Process.Pid {
		t.Fatalf("KillMarked = %v, want [%d]", pids, marked.Process.Pid)
	}
	if procs.Alive(marked.Process.Pid) { // KillMarked reaped it: no Wait
		t.Errorf("the marked process %d is alive", marked.Process.Pid)
	}
	if !procs.Alive(other.Process.Pid) {
		t.Error("the other process was killed too")
	}
}

func TestSectionsPutsABlankLineBetweenParts(t *testing.T) {
	part := func(s string) func(io.Writer, int) error {
		return func(w io.Writer, n int) error { _, err := fmt.Fprintf(w, "%s%d\n", s, n); return err }
	}
	var b strings.Builder
	if err := Sections(part("a"), part("b"), part("c"))(&b, 1); err != nil || b.String() != "a1\n\nb1\n\nc1\n" {
		t.Errorf("Sections wrote %q, %v", b.String(), err)
	}
	fail := func(io.Writer, int) error { return errors.New("broken") }
	if err := Sections(part("a"), fail, part("c"))(&b, 1); err == nil || err.Error() != "broken" {
		t.Errorf("a failing part: %v, want its error", err)
	}
}
