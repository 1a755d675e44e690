//go:build linux

package proxy

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/procs"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/mcbackend"
)

// TestAdminStatusPageInChromium renders the status page of a proxy with
// sessions on two hosts, a group that is down and a refusal in headless
// Chromium (Debian's chromium package, which .ci/run installs): the DOM
// it builds lists the backends with their state, the sessions per host
// and the refusal, and its screenshot is a 1024x768 PNG with content.
func TestAdminStatusPageInChromium(t *testing.T) {
	bin := chromiumPath(t)
	mainBE, modsBE, lobbyBE := startBackend(t, mcbackend.Config{}), startBackend(t, mcbackend.Config{}), refusedAddr(t)
	p, addr := startProxy(t, fmt.Sprintf(`
listeners: [{listen: "127.0.0.1:0"}]
default_group: main
routes:
  - {hosts: [mods.example.com], group: mods}
  - {hosts: [lobby.example.com], group: lobby}
groups:
  main: {backends: [{addr: %q}]}
  mods: {backends: [{addr: %q}]}
  lobby: {backends: [{addr: %q}]}
health: {failures: 1, interval: 20ms, timeout: 500ms, check: tcp}
`, mainBE, modsBE, lobbyBE))
	base := serveAdmin(t, p, "127.0.0.1:0")
	for _, s := range []struct{ host, user string }{{"play.example.com", "Alice"}, {"play.example.com", "Bob"}, {"mods.example.com", "Carol"}} {
		login17(t, dial(t, addr), s.host, s.user)
	}
	waitfor.For(t, "the lobby group to go down", func() bool { return slices.Equal(p.GroupsDown(), []string{"lobby"}) })
	c := dial(t, addr)
	if _, err := c.Write(append(handshake(mc.Protocol1_7_10, "lobby.example.com", mc.NextStateLogin), loginStart("Zed")...)); err != nil {
		t.Fatal(err)
	}
	if id, _ := readPacket(t, c); id != mc.PacketLoginDisconnect {
		t.Fatalf("login to the group that is down: packet %#x, want a disconnect", id)
	}

	dir := t.TempDir()
	dom := string(runChromium(t, bin, dir, "--dump-dom", base+"/"))
	for _, want := range []string{
		"<title>tidegate proxy status</title>", "3 sessions open",
		"<td>main</td><td>" + mainBE + "</td>", "<td>mods</td><td>" + modsBE + "</td>", "<td>lobby</td><td>" + lobbyBE + "</td>",
		`<span class="up">up</span>`, `<span class="down">down</span>`, "connection refused",
		`<tr><td>play.example.com</td><td class="n">2</td></tr>`, `<tr><td>mods.example.com</td><td class="n">1</td></tr>`,
		"<td>no_healthy_backend</td><td>lobby.example.com</td><td>Zed</td><td>lobby</td>",
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("Chromium's DOM of the status page lacks %s", want)
		}
	}
	if t.Failed() {
		t.Fatalf("the DOM:\n%s", dom)
	}

	shot := filepath.Join(dir, "status.png")
	runChromium(t, bin, dir, "--screenshot="+shot, "--window-size=1024,768", "--hide-scrollbars", base+"/")
	checkScreenshot(t, shot, 1024, 768)
	if keep := os.Getenv("TIDEGATE_KEEP_SCREENSHOT"); keep != "" { // to look at it
		data, err := os.ReadFile(shot)
		if err == nil {
			err = os.WriteFile(keep, data, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// chromiumPath finds Chromium, or skips the test without it, unless CI is
// set: there .ci/run has installed it, and its absence is a failure.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not on PATH and CI=true: .ci/run installs it (apt-get install --no-install-recommends chromium)")
	}
	t.Skip("chromium is not installed: apt-get install --no-install-recommends chromium, as .ci/run does, to run this test")
	return ""
}

// runChromium runs headless Chromium with args, its profile, home and
// caches in dir, and returns its standard output. Whatever it started is
// gone when it returns (see endChromium).
func runChromium(t *testing.T, bin, dir string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--disable-crash-reporter", "--disable-breakpad",
		"--user-data-dir=" + filepath.Join(dir, "profile"),
	}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "XDG_CACHE_HOME="+filepath.Join(dir, "cache"))
	// Its own process group, so that a timeout kills the renderers too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Start()
	if err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	err = cmd.Wait()
	endChromium(t, cmd.Process.Pid, dir)
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return stdout.Bytes()
}

// endChromium kills what is left of a Chromium run and waits until it is
// gone: its process group, and every process whose command line names dir
// (all of Chromium's do, through --user-data-dir or, for the crashpad
// handlers, which start sessions of their own, their database under HOME).
func endChromium(t *testing.T, pgid int, dir string) {
	t.Helper()
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	waitfor.Check(t, "Chromium's processes to end", func() error {
		left := procs.WithMarker(dir)
		if len(left) == 0 {
			return nil
		}
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		return fmt.Errorf("%v still run", left)
	})
}

// checkScreenshot checks that path is a PNG of w x h pixels that is not
// one colour: some of it differs from the background, in several colours.
func checkScreenshot(t *testing.T, path string, w, h int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("the screenshot %s is not a PNG: %v", path, err)
	}
	if b := img.Bounds(); b != image.Rect(0, 0, w, h) {
		t.Fatalf("the screenshot is %v, want %dx%d", b, w, h)
	}
	bg := img.At(0, 0)
	colours := map[[4]uint32]bool{}
	differ := 0
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := img.At(x, y)
			r, g, b, a := c.RGBA()
			colours[[4]uint32{r, g, b, a}] = true
			if c != bg {
				differ++
			}
		}
	}
	// Text in several colours (green "up", red "down") and table rules.
	if len(colours) < 8 || differ < w*h/200 {
		t.Fatalf("the screenshot has %d colours and %d pixels (of %d) unlike the background: it looks blank", len(colours), differ, w*h)
	}
	t.Logf("screenshot %s: %dx%d, %d colours, %.1f%% of pixels not background", path, w, h, len(colours), 100*float64(differ)/float64(w*h))
}
