package config

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/tidegate/tidegate/internal/testkit/testpng"
)

// TestStatusFaviconProblems: the favicon must be a readable, whole PNG of
// 64x64 pixels and at most MaxFaviconBytes; each problem names the file and
// says what is wanted. A relative path is read from the configuration
// file's directory.
func TestStatusFaviconProblems(t *testing.T) {
	dir := t.TempDir()
	good, goodData := testpng.Write(t, dir, 64, 64)
	big, _ := testpng.Write(t, dir, 128, 128)
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	notPNG := write("icon.jpg", []byte("\xff\xd8\xff\xe0 a JPEG, say"))
	padded := write("padded.png", append(bytes.Clone(goodData), make([]byte, MaxFaviconBytes)...))
	damaged := write("damaged.png", goodData[:40])
	for _, tc := range []struct {
		path, want string
	}{
		{dir, fmt.Sprintf(`status.offline.favicon: reading the favicon: %s is not a regular file (d---------)`, dir)},
		{"/dev/zero", `status.offline.favicon: reading the favicon: /dev/zero is not a regular file (Dc---------)`},
		{big, fmt.Sprintf(`status.offline.favicon: %q is 128x128 pixels: Minecraft shows a 64x64 PNG; scale it to 64x64`, big)},
		{notPNG, fmt.Sprintf(`status.offline.favicon: %q is not a PNG image (png: invalid format: not a PNG file): want a 64x64 PNG`, notPNG)},
		{padded, fmt.Sprintf(`status.offline.favicon: %q is %d bytes: want a 64x64 PNG of at most 20480 bytes (it goes into the status JSON as base64, which the game reads up to 32767 characters)`, padded, len(goodData)+MaxFaviconBytes)},
		{damaged, fmt.Sprintf(`status.offline.favicon: %q is a damaged PNG (unexpected EOF): want a 64x64 PNG`, damaged)},
	} {
		_, _, err := Parse("proxy.yaml", []byte(fmt.Sprintf("status: {offline: {favicon: %q}}\n", tc.path)+validTail))
		if err == nil || err.Error() != "proxy.yaml:1:29: "+tc.want {
			t.Errorf("favicon %s:\n got %v\nwant proxy.yaml:1:29: %s", filepath.Base(tc.path), err, tc.want)
		}
	}
	// Relative to the file's directory; the data URI is what the answer carries.
	cfgPath := write("proxy.yaml", []byte("status: {offline: {favicon: "+filepath.Base(good)+"}}\n"+validTail))
	cfg, _, err := Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(goodData); cfg.Status.Offline.favicon != want {
		t.Fatalf("favicon data %.40q", cfg.Status.Offline.favicon)
	}
	if err := cfg.Validate(); err != nil { // New and Reload validate again
		t.Fatal(err)
	}
	if cfg.Status.Offline.FaviconURI() != cfg.Status.Offline.favicon {
		t.Fatalf("FaviconURI %.40q, read %.40q", cfg.Status.Offline.FaviconURI(), cfg.Status.Offline.favicon)
	}
}
