package reactor

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"
)

// gnetModule is the module path of gnet, as the build records it.
const gnetModule = "github.com/panjf2000/gnet/v2"

// linkedGnet returns the version of gnet linked into this binary, as the
// build info records it: the replacement's when gnet is replaced, or a
// description of a replacement that has no version (a local directory).
func linkedGnet(bi *debug.BuildInfo) (string, bool) {
	for _, d := range bi.Deps {
		if d.Path != gnetModule {
			continue
		}
		switch r := d.Replace; {
		case r == nil:
			return d.Version, true
		case r.Path == gnetModule && r.Version != "":
			return r.Version, true
		default:
			return fmt.Sprintf("%s replaced by %s %s", d.Version, r.Path, r.Version), true
		}
	}
	return "", false
}

// recheckMessage says what to re-check now that linked is not gnetVersion.
func recheckMessage(linked string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "gnet %s is linked, but the reactor's reliances on gnet were checked against %s "+
		"(gnetVersion, reactor/gnetcompat.go). Re-check each in the new gnet's source, run its guard, "+
		"then set gnetVersion to %s:", linked, gnetVersion, linked)
	for i, r := range gnetReliances {
		fmt.Fprintf(&b, "\n%2d. %s\n    in gnet: %s\n    guard: %s", i+1, r.what, r.where, r.guard)
	}
	return b.String()
}

// buildInfo returns the test binary's build info. go test (go1.26) records
// no dependencies in a test binary, so then the module the build selected
// for gnet, which is the one linked, is asked of go list.
func buildInfo(t *testing.T) *debug.BuildInfo {
	t.Helper()
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatal("the test binary has no build info to read gnet's version from")
	}
	if len(bi.Deps) > 0 {
		return bi
	}
	out, err := exec.Command("go", "list", "-m", "-json", gnetModule).Output()
	if err != nil {
		t.Fatalf("the test binary lists no dependencies, and go list -m %s failed: %v", gnetModule, err)
	}
	var m debug.Module
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("decoding go list -m -json %s: %v\n%s", gnetModule, err, out)
	}
	return &debug.BuildInfo{Main: bi.Main, Deps: []*debug.Module{&m}}
}

// TestGnetVersion fails when the gnet linked is not the one every reliance
// in gnetReliances was checked against, and names each one to re-check.
func TestGnetVersion(t *testing.T) {
	bi := buildInfo(t)
	linked, ok := linkedGnet(bi)
	if !ok {
		t.Fatalf("%s is not among the test binary's dependencies (%d of them)", gnetModule, len(bi.Deps))
	}
	if linked != gnetVersion {
		t.Error(recheckMessage(linked))
	}
}

// TestGnetVersionMismatchNamesEveryReliance: the message of a mismatch
// names every reliance, with where and what checks it, and the versions.
func TestGnetVersionMismatchNamesEveryReliance(t *testing.T) {
	if len(gnetReliances) == 0 {
		t.Fatal("gnetReliances is empty")
	}
	bi := &debug.BuildInfo{Deps: []*debug.Module{{Path: "golang.org/x/sys", Version: "v0.1.0"}, {Path: gnetModule, Version: "v2.10.0"}}}
	linked, ok := linkedGnet(bi)
	if !ok || linked != "v2.10.0" {
		t.Fatalf("linkedGnet = %q, %v; want v2.10.0, true", linked, ok)
	}
	msg := recheckMessage(linked)
	for _, want := range []string{"gnet v2.10.0 is linked", "checked against " + gnetVersion} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message does not say %q:\n%s", want, msg)
		}
	}
	for i, r := range gnetReliances {
		if r.what == "" || r.where == "" || r.guard == "" {
			t.Errorf("reliance %d has an empty field: %+v", i+1, r)
		}
		for _, part := range []string{r.what, r.where, r.guard} {
			if !strings.Contains(msg, part) {
				t.Errorf("the message leaves out %q", part)
			}
		}
	}

	replaced := &debug.BuildInfo{Deps: []*debug.Module{{Path: gnetModule, Version: gnetVersion, Replace: &debug.Module{Path: "../gnet"}}}}
	if linked, _ := linkedGnet(replaced); linked == gnetVersion {
		t.Errorf("gnet replaced by a directory reads as %q, the checked version", linked)
	}
	if _, ok := linkedGnet(&debug.BuildInfo{}); ok {
		t.Error("linkedGnet found gnet in a build without it")
	}
}
