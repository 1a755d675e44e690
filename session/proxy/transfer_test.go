package proxy

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/mcbackend"
)

// TestTransferIntentIsRoutedByHost: a 1.20.5+ client that arrives after
// another server's Transfer packet says so in its handshake (next state 3).
// The proxy routes it by host as a login and relays the handshake
// unchanged, so the backend sees the transfer intent and decides whether
// it takes transfers (a vanilla server's accepts-transfers).
func TestTransferIntentIsRoutedByHost(t *testing.T) {
	hs := handshake(mc.Protocol1_20_5, "Lobby.Example.com", mc.NextStateTransfer)
	ls := loginStart("Steve")
	sent := append(append([]byte(nil), hs...), ls...)
	lobby, got := recordingBackend(t, len(sent))
	other := startBackend(t, mcbackend.Config{})
	p, addr := startProxy(t, fmt.Sprintf(`
listeners: [{listen: "127.0.0.1:0"}]
routes: [{hosts: [lobby.example.com], group: lobby}]
default_group: other
groups:
  lobby: {backends: [{addr: %q}]}
  other: {backends: [{addr: %q}]}
`, lobby, other))
	c := dial(t, addr)
	if _, err := c.Write(sent); err != nil {
		t.Fatal(err)
	}
	expectRecorded(t, got, sent)
	payload := []byte("after a transfer")
	if _, err := c.Write(mc.AppendPacket(nil, 0x03, payload)); err != nil {
		t.Fatal(err)
	}
	if id, data := readPacket(t, c); id != 0x03 || !bytes.Equal(data, payload) {
		t.Fatalf("echo via the routed backend: %#x %q", id, data)
	}
	if st := p.Stats(); len(st.Rejected) != 0 {
		t.Fatalf("refused: %v", st.Rejected)
	}
}
