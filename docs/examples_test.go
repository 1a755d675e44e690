package docs_test

import (
	"path/filepath"
	"testing"

	"github.com/tidegate/tidegate/session/proxy/config"
)

// TestExampleConfigsLoad: every example configuration under examples/
// loads without problems or warnings, the files it names included.
func TestExampleConfigsLoad(t *testing.T) {
	paths, err := filepath.Glob("examples/*/proxy.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no example configurations (%v)", err)
	}
	for _, p := range paths {
		cfg, warnings, err := config.Load(p)
		if err != nil || len(warnings) > 0 {
			t.Errorf("%s: %v, warnings %v", p, err, warnings)
			continue
		}
		if g := cfg.Groups["main"]; g.LoginMode() != config.LoginOffline || g.ForwardingSecret == "" {
			t.Errorf("%s: login %s, secret set %t", p, g.LoginMode(), g.ForwardingSecret != "")
		}
	}
}
