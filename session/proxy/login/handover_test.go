package login

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/mcauth"
	"github.com/tidegate/tidegate/session/proxy/config"
	"github.com/tidegate/tidegate/session/proxy/handover"
)

// TestCiphersResumeWhereTheyStopped is differential: a session's ciphers
// run over a stream in both directions, are handed over at a random byte
// (through the state message, encoded and decoded) and resumed; the
// resumed pair goes on with exactly the bytes the pair that never stopped
// gives, both ways, and a client's ciphers (the other ends) read them.
func TestCiphersResumeWhereTheyStopped(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		var r mcauth.Result
		r.HaveSecret = true
		for i := range r.SharedSecret {
			r.SharedSecret[i] = byte(rnd.Uint32())
		}
		proxy, whole := CiphersOf(r), CiphersOf(r)
		clientEnc, clientDec, _ := mc.NewConnCiphers(r.SharedSecret[:])
		// Two streams: the same bytes both ways would give both directions
		// the same registers.
		n := 1 + rnd.IntN(4096)
		stream, upStream := make([]byte, n), make([]byte, n)
		for i := range stream {
			stream[i], upStream[i] = byte(rnd.Uint32()), byte(rnd.Uint32())
		}
		cut := rnd.IntN(n + 1)
		down, up := bytes.Clone(stream), bytes.Clone(upStream) // proxy to client, client to proxy
		clientEnc.XORKeyStream(up, up)
		wholeDown, wholeUp := bytes.Clone(down), bytes.Clone(up)
		whole.Outbound(wholeDown, true)
		whole.Inbound(wholeUp, true)

		proxy.Outbound(down[:cut], true)
		proxy.Inbound(up[:cut], true)
		st := handover.State{Login: &Kept{ClientThreshold: -1, BackendThreshold: -1}, Cipher: proxy.HandOver()}
		data, err := handover.Encode(&st, handover.StateV2)
		if err != nil {
			t.Fatal(err)
		}
		_, res, err := DecodeState(data)
		if err != nil || res.Ciphers == nil {
			t.Fatalf("DecodeState: %+v, %v", res, err)
		}
		res.Ciphers.Outbound(down[cut:], true)
		res.Ciphers.Inbound(up[cut:], true)
		if !bytes.Equal(down, wholeDown) || !bytes.Equal(up, wholeUp) {
			t.Fatalf("cut at %d of %d: the resumed ciphers differ from the whole run", cut, len(stream))
		}
		clientDec.XORKeyStream(down, down)
		if !bytes.Equal(down, stream) || !bytes.Equal(up, upStream) {
			t.Fatalf("cut at %d of %d: the client does not read the stream", cut, len(stream))
		}
	}
}

// TestResume: a relayed login resumes to nothing; a terminated one keeps
// what it carried; thresholds that differ are refused (this build does not
// re-frame), as is a bad key.
func TestResume(t *testing.T) {
	if r, err := Resume(nil, nil); err != nil || r.Kept != nil || r.Ciphers != nil {
		t.Fatalf("relayed: %+v, %v", r, err)
	}
	k := &Kept{ClientThreshold: 256, BackendThreshold: 256, Name: "Alex"}
	if r, err := Resume(k, nil); err != nil || r.Kept != k || r.Ciphers != nil {
		t.Fatalf("offline: %+v, %v", r, err)
	}
	if _, err := Resume(&Kept{ClientThreshold: -1, BackendThreshold: 64}, nil); err == nil || !strings.Contains(err.Error(), "re-frame") {
		t.Fatalf("thresholds -1 and 64: %v", err)
	}
	var kept KeptTable[int]
	var ciphers CipherTable[int]
	r, _ := Resume(k, &handover.Cipher{})
	if !Install(r, 7, &kept, &ciphers) || kept.Get(7) != k || ciphers.Get(7) == nil {
		t.Fatal("Install did not record both")
	}
	Forget(7, &kept, &ciphers)
	if kept.Get(7) != nil || ciphers.Get(7) != nil {
		t.Fatal("Forget left them")
	}
}

// TestKept: what a session keeps of its login: thresholds both sides (the
// client's as AppendClientLogin told it; none before 1.8) and the profile.
func TestKept(t *testing.T) {
	for _, tc := range []struct {
		v                    int32
		backend, wantClient  int
		authenticated, props bool
	}{
		{mc.Protocol1_7_10, -1, -1, false, false},
		{764, 256, 256, false, false},
		{764, -1, -1, true, true},
	} {
		b := newTestBackend(t, &Settings{Forwarding: config.ForwardBungeeCord, FollowBackend: true}, tc.v)
		b.threshold = tc.backend
		if tc.authenticated {
			b.Authenticated(mcauth.Profile{UUID: [16]byte{9}, Name: "Alice", Properties: []mcauth.Property{{Name: "textures", Value: "dg==", Signature: "c2ln"}}})
		}
		k := b.Kept()
		if k.ClientThreshold != tc.wantClient || k.BackendThreshold != tc.backend || k.UUID != b.UUID() || k.Name != string(b.name) {
			t.Fatalf("v%d: kept %+v", tc.v, k)
		}
		if tc.props && (len(k.Properties) != 1 || k.Properties[0] != handover.Property{Name: "textures", Value: "dg==", Signature: "c2ln"}) {
			t.Fatalf("v%d: properties %+v", tc.v, k.Properties)
		}
		var tab KeptTable[string]
		tab.Keep("a", nil)
		tab.Keep("b", b)
		if tab.Get("a") != nil || tab.Get("b") == nil {
			t.Fatal("Keep of a relayed login recorded something, or of a terminated one nothing")
		}
	}
	var none *Ciphers
	if none.HandOver() != nil {
		t.Fatal("nil ciphers hand over a state")
	}
}
