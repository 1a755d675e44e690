package mc

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"testing"
)

// The decoders of the terminating login: none panics, and what one accepts
// encodes to bytes it accepts again as the same (encodings need not match
// the input, which may use non-minimal VarInts).

func FuzzParseLoginStartAt(f *testing.F) {
	key := &PlayerKey{Expiry: 1, PublicKey: []byte("p"), Signature: []byte("s")}
	for _, v := range []int32{5, 759, 760, 761, 764, 767, 770} {
		f.Add(AppendLoginStart(nil, v, LoginStart{Name: []byte("Notch"), Key: key, HasUUID: true, UUID: testUUID}), v)
	}
	f.Fuzz(func(t *testing.T, body []byte, v int32) {
		ls, err := ParseLoginStartAt(body, v)
		if err != nil {
			return
		}
		enc := AppendLoginStart(nil, v, ls)
		again, err := ParseLoginStartAt(enc, v)
		if err != nil || !bytes.Equal(AppendLoginStart(nil, v, again), enc) {
			t.Fatalf("v%d: %x parsed to %+v, which encodes to %x, parsed %+v, %v", v, body, ls, enc, again, err)
		}
	})
}

func FuzzParseLoginSuccess(f *testing.F) {
	props := []Property{{Name: []byte("textures"), Value: []byte("v"), Signed: true, Signature: []byte("s")}}
	for _, v := range []int32{4, 5, 735, 759, 766, 768} {
		f.Add(AppendLoginSuccess(nil, v, LoginSuccess{UUID: testUUID, Name: []byte("Notch"), Properties: props}), v)
	}
	f.Fuzz(func(t *testing.T, body []byte, v int32) {
		ls, err := ParseLoginSuccess(body, v)
		if err != nil {
			return
		}
		// A string UUID may be in either case; re-encode and compare decoded.
		again, err := ParseLoginSuccess(AppendLoginSuccess(nil, v, ls), v)
		if err != nil || again.UUID != ls.UUID || !bytes.Equal(again.Name, ls.Name) || len(again.Properties) != len(ls.Properties) || again.StrictErrors != ls.StrictErrors {
			t.Fatalf("v%d: %+v does not round-trip: %+v, %v", v, ls, again, err)
		}
	})
}

func FuzzLoginPluginMessages(f *testing.F) {
	f.Add(AppendPluginRequest(nil, PluginRequest{MessageID: 1, Channel: []byte(VelocityChannel), Data: []byte{4}}))
	f.Add(AppendPluginResponse(nil, PluginResponse{MessageID: 1, Successful: true, Data: []byte("x")}))
	f.Add(AppendLoginDisconnect(nil, []byte(`{"text":"x"}`))[1:])
	f.Fuzz(func(t *testing.T, body []byte) {
		if pr, err := ParsePluginRequest(body); err == nil {
			enc := AppendPluginRequest(nil, pr)
			if again, err := ParsePluginRequest(enc); err != nil || !bytes.Equal(AppendPluginRequest(nil, again), enc) {
				t.Fatalf("plugin request %x does not round-trip: %v", body, err)
			}
		}
		if pr, err := ParsePluginResponse(body); err == nil {
			enc := AppendPluginResponse(nil, pr)
			if again, err := ParsePluginResponse(enc); err != nil || !bytes.Equal(AppendPluginResponse(nil, again), enc) {
				t.Fatalf("plugin response %x does not round-trip: %v", body, err)
			}
		}
		_, _ = ParseLoginDisconnect(body)
		_, _ = ParseVelocityRequest(body)
	})
}

func FuzzVerifyVelocityResponse(f *testing.F) {
	secret := []byte("secret")
	key := &PlayerKey{Expiry: 1, PublicKey: []byte("p"), Signature: []byte("s")}
	for v := int32(1); v <= VelocityMaxVersion; v++ {
		f.Add(AppendVelocityResponse(nil, secret, VelocityInfo{Version: v, Address: []byte("127.0.0.1"), UUID: testUUID, Name: []byte("N"), Key: key, HasHolder: true}))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Signed payloads: the fuzzer's bytes after a valid signature.
		if len(data) > velocitySigLen {
			payload := data[velocitySigLen:]
			mac := hmac.New(sha256.New, secret)
			mac.Write(payload)
			signed := append(mac.Sum(nil), payload...)
			if info, err := VerifyVelocityResponse(signed, secret, VelocityMaxVersion); err == nil {
				enc := AppendVelocityResponse(nil, secret, info)
				again, err := VerifyVelocityResponse(enc, secret, VelocityMaxVersion)
				if err != nil || !bytes.Equal(AppendVelocityResponse(nil, secret, again), enc) {
					t.Fatalf("payload %x parsed to %+v, which does not round-trip: %v", payload, info, err)
				}
			}
		}
		_, _ = VerifyVelocityResponse(data, secret, VelocityMaxVersion)
	})
}

func FuzzInflate(f *testing.F) {
	var c Compressor
	frame := c.AppendFrame(nil, bytes.Repeat([]byte("ab"), 100), 16)
	_, hl, _ := SplitFrame(frame, MaxFrameLength)
	f.Add(frame[hl:], 16)
	f.Add(append(AppendVarInt(nil, MaxServerboundUncompressed), zlibOf(make([]byte, 5000))...), 0)
	f.Fuzz(func(t *testing.T, body []byte, threshold int) {
		const limit = 1 << 16
		var c Compressor
		got, err := c.Inflate(body, threshold, limit)
		if cap(c.inflated) > limit+1 {
			t.Fatalf("the inflate buffer grew to %d bytes, past the limit %d", cap(c.inflated), limit)
		}
		if err != nil {
			return
		}
		if dl, _, _ := ParseCompressedHeader(body); dl != 0 && int(dl) != len(got) {
			t.Fatalf("inflated %d bytes, declared %d", len(got), dl)
		}
	})
}
