// Package revision tells which source revision a binary was built from, for
// the reports that benchmark tools write.
package revision

import (
	"runtime/debug"
)

// Stamp is the revision `make build` writes into the binary with
// -ldflags "-X github.com/tidegate/tidegate/internal/revision.Stamp=..."
// (git describe --always --dirty). It is empty in a plain go build, whose
// VCS stamp is missing with -buildvcs=false or outside a checkout.
var Stamp string

// This returns the revision of the running binary: Stamp when make build set
// it, else Go's VCS stamp, else "".
func This() string {
	if Stamp != "" {
		return Stamp
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		return VCS(bi)
	}
	return ""
}

// VCS returns the VCS stamp of a build: vcs.revision, with "-dirty" when
// vcs.modified; empty when it has none (-buildvcs=false).
func VCS(bi *debug.BuildInfo) string {
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev == "" {
		return ""
	}
	return rev + dirty
}
