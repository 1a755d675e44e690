package proxy

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Tnze/go-mc/bot"
	mcnet "github.com/Tnze/go-mc/net"

	"github.com/tidegate/tidegate/internal/testkit/gomcbot"
	"github.com/tidegate/tidegate/internal/testkit/leaktest"
	"github.com/tidegate/tidegate/internal/testkit/testserver"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/mcbackend"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
)

const testForwardingSecret = "tidegate-test-secret"

// offlineConfig is a proxy configuration whose group main, at backend,
// has its logins completed by the proxy with the given forwarding (the
// velocity secret is testForwardingSecret, from a file).
func offlineConfig(t testing.TB, backend, forwarding string) string {
	t.Helper()
	secret := filepath.Join(t.TempDir(), "forwarding.secret")
	if err := os.WriteFile(secret, []byte(testForwardingSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keys := ""
	if forwarding == "velocity" {
		keys = fmt.Sprintf(", forwarding_key_file: %q", secret)
	}
	return fmt.Sprintf(`
listeners: [{listen: "127.0.0.1:0"}]
default_group: main
groups: {main: {backends: [{addr: %q}], login: offline, forwarding: %s%s}}
`, backend, forwarding, keys)
}

// TestGoMCBotOfflineLoginThroughProxy: go-mc's bot (protocol 764) logs in
// through a proxy that completes the login itself, to the fake backend
// expecting each forwarding, with and without compression; it reaches
// play (the configuration state relayed from the backend) and its play
// packets are echoed.
func TestGoMCBotOfflineLoginThroughProxy(t *testing.T) {
	for _, fw := range []struct {
		name    string
		backend mcbackend.Forwarding
	}{{"velocity", mcbackend.ForwardVelocity}, {"bungeecord", mcbackend.ForwardBungeeCord}, {"none", mcbackend.ForwardNone}} {
		for _, compression := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/compression=%t", fw.name, compression), func(t *testing.T) {
				checkNoLeaks(t)
				srv, be := startBackendServer(t, mcbackend.Config{Compression: compression, CompressionThreshold: 64,
					Forwarding: fw.backend, ForwardingSecret: []byte(testForwardingSecret)})
				p, addr := startProxy(t, offlineConfig(t, be, fw.name))
				b := gomcbot.Join(t, addr, "OfflineBot", 10*time.Second)
				b.Echo(t, bytes.Repeat([]byte("terminated "), 30))
				b.Echo(t, []byte("small"))
				waitStats(t, p, "the routed session", func(st proxymetrics.Stats) bool { return st.Routed == 1 && st.Rejected["backend_login"] == 0 })
				expectOnePlayerThenEnd(t, srv, p, b, fw.backend)
			})
		}
	}
}

// checkNoLeaks, called before a test starts its servers, checks once they
// have stopped (its cleanup runs after theirs) that the descriptors and
// goroutines are back to what they were: the test's sessions, proxy and
// backend left nothing open or running.
func checkNoLeaks(t *testing.T) {
	t.Helper()
	fds, goroutines := leaktest.OpenFDs(), leaktest.Goroutines()
	t.Cleanup(func() {
		waitfor.Check(t, "the descriptors and goroutines to go", func() error {
			if n := leaktest.OpenFDs(); n > fds {
				return fmt.Errorf("%d descriptors open, %d before", n, fds)
			}
			if n := leaktest.Goroutines(); n > goroutines {
				return fmt.Errorf("%d goroutines, %d before", n, goroutines)
			}
			return nil
		})
	})
}

// joinErr joins a go-mc bot through addr and returns why the login failed.
// go-mc does not close its socket when a login fails, so the dialer keeps
// it for the test to close.
func joinErr(t *testing.T, addr, name string) error {
	t.Helper()
	c := bot.NewClient()
	c.Auth.Name = name
	d := &keptDialer{d: gomcbot.Dialer{D: 10 * time.Second}}
	err := c.JoinServerWithOptions(addr, bot.JoinOptions{MCDialer: d})
	if d.conn != nil {
		_ = d.conn.Close()
	}
	if err == nil {
		t.Fatalf("%s joined through %s, want a refusal", name, addr)
	}
	return err
}

// keptDialer is a go-mc dialer that keeps the connection it made.
type keptDialer struct {
	d    gomcbot.Dialer
	conn *mcnet.Conn
}

// DialMCContext implements go-mc's bot.MCDialer.
func (k *keptDialer) DialMCContext(ctx context.Context, addr string) (*mcnet.Conn, error) {
	c, err := k.d.DialMCContext(ctx, addr)
	k.conn = c
	return c, err
}

// TestOfflineLoginRefusals: a backend that refuses the velocity signature,
// one that is not set up for the forwarding the proxy uses, and one that
// asks for velocity forwarding of a proxy that forwards bungeecord: the
// player reads why, the proxy counts backend_login, the backend its own
// refusal.
func TestOfflineLoginRefusals(t *testing.T) {
	for _, tc := range []struct {
		name       string
		backend    mcbackend.Config
		forwarding string
		want       string // in the disconnect the player reads
		backendBad int64  // the backend's bad_forwarding count
	}{
		{"wrong secret", mcbackend.Config{Forwarding: mcbackend.ForwardVelocity, ForwardingSecret: []byte("another secret")}, "velocity", "Unable to verify player details", 1},
		{"backend without forwarding", mcbackend.Config{}, "velocity", "not set up for the proxy's player forwarding", 0},
		{"velocity backend, bungeecord proxy", mcbackend.Config{Forwarding: mcbackend.ForwardVelocity, ForwardingSecret: []byte("x")}, "bungeecord", "not set up for the proxy's player forwarding", 0},
		{"bungeecord backend, no forwarding", mcbackend.Config{Forwarding: mcbackend.ForwardBungeeCord}, "none", "please enable it in your BungeeCord config", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkNoLeaks(t)
			srv, be := startBackendServer(t, tc.backend)
			p, addr := startProxy(t, offlineConfig(t, be, tc.forwarding))
			if err := joinErr(t, addr, "Refused"); !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("login error %v, want one saying %q", err, tc.want)
			}
			waitStats(t, p, "the refusal", func(st proxymetrics.Stats) bool { return st.Rejected["backend_login"] == 1 && st.Active == 0 })
			waitfor.Value(t, "the backend's refusal", srv.Stats, func(st mcbackend.Stats) bool { return st.BadForwarding == tc.backendBad })
		})
	}
}

// fakeBackend listens on loopback and answers every connection with
// reply, once it has read the handshake and Login Start, then waits for
// the proxy to close; with a nil reply it closes at once.
func fakeBackend(t *testing.T, reply []byte) string {
	t.Helper()
	return testserver.Conns(t, func(c net.Conn) {
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 512)
		_, _ = c.Read(buf)
		if reply == nil {
			return // closes at once
		}
		_, _ = c.Write(reply)
		_, _ = c.Read(buf) // until the proxy closes
	})
}

// TestOfflineLoginBadBackendInput: a backend whose login frames are
// malformed, oversized once inflated, or out of place fails the login with
// a counted reason and a disconnect, and the proxy holds no buffer past
// the inflation limit.
func TestOfflineLoginBadBackendInput(t *testing.T) {
	var k mc.Compressor
	setComp := k.AppendFrame(nil, mc.AppendSetCompression(nil, 64), -1)
	bomb := append(mc.AppendVarInt(nil, 1<<22), zlibBytes(make([]byte, 1<<22))...)
	for _, tc := range []struct {
		name  string
		reply []byte
		want  string
	}{
		{"inflates past the limit", append(bytes.Clone(setComp), append(mc.AppendVarInt(nil, int32(len(bomb))), bomb...)...), "malformed login"},
		{"play packet in login", mc.AppendPacket(nil, 0x26, []byte("x")), "malformed login"},
		{"encryption request", mc.AppendPacket(nil, mc.PacketEncryptionRequest, []byte{0}), "online mode"},
		{"closes", nil, "closed the connection"},
		{"disconnect", mc.AppendLoginDisconnect(nil, []byte(`{"text":"Whitelisted players only"}`)), "Whitelisted players only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkNoLeaks(t)
			be := fakeBackend(t, tc.reply)
			p, addr := startProxy(t, offlineConfig(t, be, "none"))
			c := dial(t, addr)
			if _, err := c.Write(append(handshake(764, "localhost", mc.NextStateLogin), loginStartUUID("Bad")...)); err != nil {
				t.Fatal(err)
			}
			id, data := readPacket(t, c)
			if id != mc.PacketLoginDisconnect || !strings.Contains(string(data), tc.want) {
				t.Fatalf("packet 0x%02x %q, want a disconnect saying %q", id, data, tc.want)
			}
			waitStats(t, p, "the refusal", func(st proxymetrics.Stats) bool { return st.Rejected["backend_login"] == 1 })
		})
	}
}

// loginStartUUID is a 1.20.2 Login Start body's frame for name.
func loginStartUUID(name string) []byte {
	return mc.AppendPacket(nil, mc.PacketLoginStart, append(mc.AppendString(nil, []byte(name)), make([]byte, 16)...))
}

func zlibBytes(b []byte) []byte {
	var k mc.Compressor
	frame := k.AppendFrame(nil, b, 0)
	_, hl, _ := mc.SplitFrame(frame, mc.MaxFrameLength)
	_, n, _ := mc.ReadVarInt(frame[hl:])
	return frame[hl+n:]
}

// TestOfflineLoginEveryVersion: a client of each login shape from 1.7.10
// to 1.21.x logs in through the proxy to the fake backend with velocity
// forwarding (versions 2 and 3 carrying the 1.19 and 1.19.1 chat keys; the
// fake backend asks before 1.13 too, which a real one cannot) and with
// bungeecord forwarding, with compression where the version has it: it is
// told the backend's
// threshold, gets the proxy's Login Success, goes through the backend's
// configuration state (1.20.2+) and has a play packet echoed.
func TestOfflineLoginEveryVersion(t *testing.T) {
	for _, fw := range []struct {
		name    string
		backend mcbackend.Forwarding
	}{{"velocity", mcbackend.ForwardVelocity}, {"bungeecord", mcbackend.ForwardBungeeCord}} {
		t.Run(fw.name, func(t *testing.T) {
			srv, be := startBackendServer(t, mcbackend.Config{Compression: true, CompressionThreshold: 64, SkipJoinGame: true,
				Forwarding: fw.backend, ForwardingSecret: []byte(testForwardingSecret)})
			_, addr := startProxy(t, offlineConfig(t, be, fw.name))
			key := &mc.PlayerKey{Expiry: 1 << 40, PublicKey: bytes.Repeat([]byte{1}, 294), Signature: bytes.Repeat([]byte{2}, 512)}
			for i, v := range []int32{mc.Protocol1_7_10, 47, 340, 393, 758, 759, 760, 761, 763, 764, 765, 766, 767, 768, 774} {
				name := fmt.Sprintf("Player%d", v)
				c := dial(t, addr)
				ls := mc.LoginStart{Name: []byte(name), HasUUID: v >= mc.ProtocolLoginUUIDOptional, UUID: mc.OfflineUUID([]byte(name))}
				if v == mc.Protocol1_19 || v == mc.ProtocolLoginUUIDOptional {
					ls.Key = key
				}
				start := mc.AppendLoginStart(nil, v, ls)
				if _, err := c.Write(append(handshake(v, "localhost", mc.NextStateLogin), mc.AppendPacket(nil, int32(start[0]), start[1:])...)); err != nil {
					t.Fatal(err)
				}
				compressed := mc.LoginLayoutOf(v).Compression
				// next reads a packet; in the compressed framing every packet here
				// is below the threshold, so data length 0.
				next := func() (int32, []byte) {
					id, data := readPacket(t, c)
					if !compressed {
						return id, data
					}
					if id != 0 {
						t.Fatalf("v%d: a compressed packet of %d bytes, want none", v, id)
					}
					id, data, err := mc.ParsePacketID(data)
					if err != nil {
						t.Fatal(err)
					}
					return id, data
				}
				send := func(id int32, data []byte) {
					body := append(mc.AppendVarInt(nil, id), data...)
					if compressed {
						body = append([]byte{0}, body...)
					}
					if _, err := c.Write(append(mc.AppendVarInt(nil, int32(len(body))), body...)); err != nil {
						t.Fatal(err)
					}
				}
				if compressed {
					id, data := readPacket(t, c)
					if th, err := mc.ParseSetCompression(append([]byte{byte(id)}, data...)); err != nil || th != 64 {
						t.Fatalf("v%d: Set Compression %d, %v (packet 0x%02x)", v, th, err, id)
					}
				}
				id, data := next()
				got, err := mc.ParseLoginSuccess(append([]byte{byte(id)}, data...), v)
				if err != nil || got.UUID != mc.OfflineUUID([]byte(name)) || string(got.Name) != name {
					t.Fatalf("v%d: Login Success %+v, %v", v, got, err)
				}
				if mc.HasConfigurationState(v) {
					send(mc.PacketLoginAcknowledged, nil)
					finish, _ := next()
					send(finish, nil) // acknowledged
				}
				send(0x12, []byte("echo "+name))
				if id, data := next(); id != 0x12 || string(data) != "echo "+name {
					t.Fatalf("v%d: echo 0x%02x %q", v, id, data)
				}
				_ = c.Close()
				waitfor.Value(t, "the backend's logins", srv.Stats, func(st mcbackend.Stats) bool {
					verified := int64(map[bool]int{true: i + 1}[fw.backend == mcbackend.ForwardVelocity])
					return st.PlayStarted == int64(i+1) && st.Forwarded == verified && st.Rejected() == 0
				})
			}
		})
	}
}

// TestHandOverTerminatedSessions: sessions whose login the proxy completed
// relay like any other once in play, so a hand-over moves them (go-mc bots
// keep their echo through the new proxy); a session whose backend login
// is still under way is not handed over and stays with the old proxy.
func TestHandOverTerminatedSessions(t *testing.T) {
	be := startBackend(t, mcbackend.Config{Compression: true, CompressionThreshold: 64,
		Forwarding: mcbackend.ForwardVelocity, ForwardingSecret: []byte(testForwardingSecret)})
	cfg := offlineConfig(t, be, "velocity")
	oldP, addr := startProxy(t, cfg)
	newP, _ := startProxy(t, cfg)
	var bots []*goMCBot
	for i := range 3 {
		b := joinGoMCBot(t, addr, fmt.Sprintf("Terminated%d", i))
		b.echo(t, bytes.Repeat([]byte("before "), 30))
		bots = append(bots, b)
	}
	if n := handOver(t, oldP, newP); n != len(bots) {
		t.Fatalf("handed over %d sessions, want %d", n, len(bots))
	}
	for _, b := range bots {
		b.echo(t, bytes.Repeat([]byte("after the hand-over "), 30))
	}

	// A backend that sends half a frame keeps the login pending.
	stalled := fakeBackend(t, []byte{0x20, 0x04})
	oldS, addrS := startProxy(t, offlineConfig(t, stalled, "none")+"limits: {handshake_timeout: 30s}\n")
	newS, _ := startProxy(t, offlineConfig(t, stalled, "none"))
	c := dial(t, addrS)
	if _, err := c.Write(append(handshake(764, "localhost", mc.NextStateLogin), loginStartUUID("Pending")...)); err != nil {
		t.Fatal(err)
	}
	waitStats(t, oldS, "the backend login under way", func(st proxymetrics.Stats) bool { return st.Routed == 1 })
	send, recv := handoverPair(t)
	go func() {
		_, _ = newS.TakeOver(recv)
		recv.Close()
	}()
	n, err := oldS.HandOver(context.Background(), send, HandOverOptions{Stall: 500 * time.Millisecond, Acked: true})
	send.Close()
	if n != 0 {
		t.Fatalf("handed over %d sessions in their backend login (%v), want 0", n, err)
	}
	if a := oldS.Stats().Active; a != 1 {
		t.Fatalf("the old proxy holds %d sessions, want the pending one", a)
	}
}

// expectOnePlayerThenEnd checks that the backend took exactly one player
// into play without a refusal, verifying a velocity forwarding when fw is
// velocity, and that the session ends in the proxy once the bot leaves.
func expectOnePlayerThenEnd(t *testing.T, srv *mcbackend.Server, p *Proxy, b *gomcbot.Bot, fw mcbackend.Forwarding) {
	t.Helper()
	st := srv.Stats()
	if st.Rejected() != 0 || st.PlayStarted != 1 {
		t.Fatalf("backend: %d rejected, %d in play", st.Rejected(), st.PlayStarted)
	}
	if want := int64(map[bool]int{true: 1}[fw == mcbackend.ForwardVelocity]); st.Forwarded != want {
		t.Fatalf("backend verified %d velocity forwardings, want %d", st.Forwarded, want)
	}
	if err := b.Client.Close(); err != nil {
		t.Fatal(err)
	}
	waitStats(t, p, "the session to end", func(st proxymetrics.Stats) bool { return st.Active == 0 })
}
