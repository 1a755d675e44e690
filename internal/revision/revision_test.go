package revision

import (
	"runtime/debug"
	"testing"
)

func TestThisPrefersTheStamp(t *testing.T) {
	old := Stamp
	t.Cleanup(func() { Stamp = old })
	Stamp = "v0.1-5-gdeadbee-dirty"
	if got := This(); got != Stamp {
		t.Fatalf("This() = %q with Stamp %q", got, Stamp)
	}
}

func TestVCS(t *testing.T) {
	bi := &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}}
	if got := VCS(bi); got != "abc123-dirty" {
		t.Errorf("VCS = %q, want abc123-dirty", got)
	}
	bi.Settings[1].Value = "false"
	if got := VCS(bi); got != "abc123" {
		t.Errorf("VCS = %q, want abc123", got)
	}
	if got := VCS(&debug.BuildInfo{}); got != "" {
		t.Errorf("VCS of a build without a stamp = %q, want empty", got)
	}
}
