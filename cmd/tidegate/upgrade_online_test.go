package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/Tnze/go-mc/bot"

	"github.com/tidegate/tidegate/internal/testkit/gomcbot"
	"github.com/tidegate/tidegate/internal/testkit/sessionserver"
	"github.com/tidegate/tidegate/internal/testkit/testserver"
	"github.com/tidegate/tidegate/session/mcbackend"
)

// TestLiveUpgradeKeepsTerminatedPlayers: two go-mc bots play through a
// proxy that completes their logins, one online (authenticated against a
// session server on loopback, AES/CFB8 on its connection) and one offline,
// both with compression and velocity forwarding. Each streams 400 echo
// frames while the proxy gets SIGUSR2: the new process says it reads the
// state message version that carries cipher state, takes both sessions
// with their ciphers, and every frame comes back once and in order; the
// old process exits 0.
func TestLiveUpgradeKeepsTerminatedPlayers(t *testing.T) {
	const secret = "upgrade-forwarding-secret"
	ss := sessionserver.Start(t)
	alice := sessionserver.Player{Name: "Alice", UUID: "3f1e6bd4a4c84a5c9b0e2f7d1c5a9e21", AccessToken: "alice-token"}
	ss.AddPlayer(alice)
	ss.RedirectDefaultClient(t)
	_, be := testserver.MCBackend(t, mcbackend.Config{Compression: true, CompressionThreshold: 64,
		Forwarding: mcbackend.ForwardVelocity, ForwardingSecret: []byte(secret)})
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "forwarding.secret")
	if err := os.WriteFile(keyFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	listen, metrics := freePort(t), freePort(t)
	cfg := filepath.Join(dir, "proxy.yaml")
	group := fmt.Sprintf("{backends: [{addr: %q}], forwarding: velocity, forwarding_key_file: %q", be, keyFile)
	// The online bot names 127.0.0.1 (the default group), the offline one
	// localhost (routed to the offline group).
	yaml := fmt.Sprintf("online_mode: {session_server: %q}\nlisteners: [{listen: %q}]\n"+
		"routes: [{hosts: [localhost], group: offline}]\ndefault_group: authenticated\n"+
		"groups: {authenticated: %s, login: online}, offline: %s, login: offline}}\n"+
		"shutdown: {drain_timeout: 30s}\n", ss.URL, listen, group, group)
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	ch := startChild(t, 0, "proxy", "--config", cfg, "--metrics-listen", metrics, "--log-level", "info")
	waitListening(t, ch, listen)
	oldPID := healthPID(t, metrics)
	_, port, _ := net.SplitHostPort(listen)
	online := gomcbot.JoinAs(t, listen, bot.Auth{Name: alice.Name, UUID: alice.UUID, AsTk: alice.AccessToken}, 120*time.Second)
	offline := gomcbot.Join(t, net.JoinHostPort("localhost", port), "Bob", 120*time.Second)
	const frames, signalAt = 400, 100
	frame := func(i int) []byte { return bytes.Repeat(fmt.Appendf(nil, "frame %d;", i), 1+i%50) }
	stop := make(chan struct{})
	sent := make(chan error, 2)
	for _, b := range []*gomcbot.Bot{online, offline} {
		go func() {
			for i := range frames {
				select {
				case <-stop:
					sent <- nil
					return
				default:
				}
				if err := b.Send(frame(i)); err != nil {
					sent <- fmt.Errorf("%s: frame %d: %w", b.Client.Auth.Name, i, err)
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
			sent <- nil
		}()
	}
	defer func() { // the senders end before the bots close
		close(stop)
		for range 2 {
			if err := <-sent; err != nil {
				t.Error(err)
			}
		}
	}()
	for i := range frames {
		if i == signalAt {
			if err := ch.cmd.Process.Signal(syscall.SIGUSR2); err != nil {
				t.Fatal(err)
			}
		}
		for _, b := range []*gomcbot.Bot{online, offline} {
			p, err := b.NextEcho(60 * time.Second)
			if err != nil {
				t.Fatalf("echo %d: %v", i, err)
			}
			if !bytes.Equal(p, frame(i)) {
				t.Fatalf("%s: echo %d is %.30q, want frame %d", b.Client.Auth.Name, i, p, i)
			}
		}
	}
	newPID := newHealthPID(t, metrics, oldPID)
	t.Cleanup(func() { _ = syscall.Kill(newPID, syscall.SIGKILL) })
	waitOldProcessExit(t, ch)
	for _, b := range []*gomcbot.Bot{online, offline} {
		b.Echo(t, []byte("after the upgrade, from the new process"))
	}
}

// waitOldProcessExit waits for the old process of an upgrade to exit 0
// once it handed everything over; one still running after 40 s logs its
// goroutines (SIGQUIT) and fails the test.
func waitOldProcessExit(t *testing.T, ch *child) {
	t.Helper()
	select {
	case err := <-ch.done:
		ch.done <- err
		if err != nil {
			t.Fatalf("old process: %v, want exit 0", err)
		}
	case <-time.After(40 * time.Second):
		_ = ch.cmd.Process.Signal(syscall.SIGQUIT) // its goroutines go to the log
		time.Sleep(2 * time.Second)
		t.Fatal("the old process did not exit after handing everything over")
	}
}
