package mc

import (
	"bytes"
	"compress/zlib"
	"encoding/hex"
	"errors"
	"testing"
)

func TestLoginLayoutOf(t *testing.T) {
	for _, tc := range []struct {
		v       int32
		release string
	}{
		{-1, "1.7.2"}, {4, "1.7.2"}, {Protocol1_7_10, "1.7.6"}, {46, "1.7.6"}, {47, "1.8"}, {340, "1.8"},
		{393, "1.13"}, {578, "1.13"}, {735, "1.16"}, {758, "1.16"}, {759, "1.19"}, {760, "1.19.1"},
		{761, "1.19.3"}, {763, "1.19.3"}, {764, "1.20.2"}, {765, "1.20.2"}, {766, "1.20.5"}, {767, "1.20.5"},
		{768, "1.21.2"}, {774, "1.21.2"}, {0x40000000 | 250, "1.21.2"},
	} {
		if got := LoginLayoutOf(tc.v).Release; got != tc.release {
			t.Errorf("LoginLayoutOf(%d) = row %s, want %s", tc.v, got, tc.release)
		}
	}
	l := LoginLayoutOf(Protocol1_7_10)
	if l.Compression || l.PluginMessages || l.Acknowledge || l.SuccessUUID != UUIDDashed {
		t.Errorf("1.7.10 layout %+v", l)
	}
	for i := 1; i < len(loginLayouts); i++ {
		if loginLayouts[i].From <= loginLayouts[i-1].From {
			t.Errorf("row %s does not start after row %s", loginLayouts[i].Release, loginLayouts[i-1].Release)
		}
	}
}

var testUUID = [16]byte{0x06, 0x9a, 0x79, 0xf4, 0x44, 0xe9, 0x40, 0x26, 0xbf, 0xcf, 0xb0, 0xb9, 0x68, 0x2b, 0x88, 0x8b}

func TestLoginSuccessEncodings(t *testing.T) {
	props := []Property{{Name: []byte("textures"), Value: []byte("dmFs"), Signed: true, Signature: []byte("c2ln")}}
	for _, tc := range []struct {
		v     int32
		props []Property
		want  string // hex of the body after the name
	}{
		{4, nil, ""},
		{Protocol1_7_10, nil, ""},
		{Protocol1_16, nil, ""},
		{Protocol1_19, nil, "00"},
		{Protocol1_19, props, "01" + "08" + hex.EncodeToString([]byte("textures")) + "04" + hex.EncodeToString([]byte("dmFs")) + "01" + "04" + hex.EncodeToString([]byte("c2ln"))},
		{Protocol1_20_5, nil, "0000"},
		{Protocol1_21_2, nil, "00"},
	} {
		ls := LoginSuccess{UUID: testUUID, Name: []byte("Notch"), Properties: tc.props}
		body := AppendLoginSuccess(nil, tc.v, ls)
		var head []byte
		head = AppendVarInt(head, PacketLoginSuccess)
		switch LoginLayoutOf(tc.v).SuccessUUID {
		case UUIDHex:
			head = AppendString(head, []byte("069a79f444e94026bfcfb0b9682b888b"))
		case UUIDDashed:
			head = AppendString(head, []byte("069a79f4-44e9-4026-bfcf-b0b9682b888b"))
		default:
			head = append(head, testUUID[:]...)
		}
		head = AppendString(head, []byte("Notch"))
		if want := hex.EncodeToString(head) + tc.want; hex.EncodeToString(body) != want {
			t.Errorf("v%d: Login Success %x, want %s", tc.v, body, want)
		}
		got, err := ParseLoginSuccess(body, tc.v)
		if err != nil || got.UUID != testUUID || string(got.Name) != "Notch" || len(got.Properties) != len(tc.props) {
			t.Errorf("v%d: ParseLoginSuccess = %+v, %v", tc.v, got, err)
		}
		if _, err := ParseLoginSuccess(append(body, 0), tc.v); !errors.Is(err, ErrBadLoginSuccess) {
			t.Errorf("v%d: trailing byte: %v", tc.v, err)
		}
		if _, err := ParseLoginSuccess(body[:len(body)-1], tc.v); !errors.Is(err, ErrBadLoginSuccess) {
			t.Errorf("v%d: truncated: %v", tc.v, err)
		}
	}
}

func TestLoginStartForms(t *testing.T) {
	key := &PlayerKey{Expiry: 1700000000000, PublicKey: []byte("pub"), Signature: []byte("sig")}
	for _, tc := range []struct {
		v    int32
		ls   LoginStart
		want string // hex after the name
	}{
		{Protocol1_7_10, LoginStart{}, ""},
		{758, LoginStart{}, ""},
		{Protocol1_19, LoginStart{}, "00"},
		{Protocol1_19, LoginStart{Key: key}, "01" + "0000018bcfe56800" + "03707562" + "03736967"},
		{ProtocolLoginUUIDOptional, LoginStart{Key: key, HasUUID: true, UUID: testUUID}, "01" + "0000018bcfe56800" + "03707562" + "03736967" + "01" + hex.EncodeToString(testUUID[:])},
		{ProtocolLoginUUIDOptional, LoginStart{}, "0000"},
		{ProtocolLoginUUIDNoSig, LoginStart{HasUUID: true, UUID: testUUID}, "01" + hex.EncodeToString(testUUID[:])},
		{ProtocolLoginUUIDNoSig, LoginStart{}, "00"},
		{ProtocolLoginUUID, LoginStart{HasUUID: true, UUID: testUUID}, hex.EncodeToString(testUUID[:])},
		{Protocol1_21_2, LoginStart{HasUUID: true, UUID: testUUID}, hex.EncodeToString(testUUID[:])},
	} {
		tc.ls.Name = []byte("Notch")
		body := AppendLoginStart(nil, tc.v, tc.ls)
		if want := "00054e6f746368" + tc.want; hex.EncodeToString(body) != want {
			t.Errorf("v%d: Login Start %x, want %s", tc.v, body, want)
			continue
		}
		got, err := ParseLoginStartAt(body, tc.v)
		if err != nil || string(got.Name) != "Notch" || got.HasUUID != tc.ls.HasUUID || got.UUID != tc.ls.UUID || (got.Key == nil) != (tc.ls.Key == nil) {
			t.Errorf("v%d: ParseLoginStartAt = %+v, %v", tc.v, got, err)
		}
		if got.Key != nil && (got.Key.Expiry != key.Expiry || string(got.Key.PublicKey) != "pub" || string(got.Key.Signature) != "sig") {
			t.Errorf("v%d: key %+v", tc.v, got.Key)
		}
		if _, err := ParseLoginStartAt(append(body, 0), tc.v); !errors.Is(err, ErrBadLoginStart) {
			t.Errorf("v%d: trailing byte: %v", tc.v, err)
		}
		if u, ok := LoginStartUUID(body, tc.v); tc.v >= ProtocolLoginUUIDOptional && (ok != tc.ls.HasUUID || u != tc.ls.UUID) {
			t.Errorf("v%d: LoginStartUUID = %x, %t", tc.v, u, ok)
		}
	}
	if _, err := ParseLoginStartAt([]byte{0, 5, 'N', 'o', 't', 'c', 'h', 2}, Protocol1_19); !errors.Is(err, ErrBadLoginStart) {
		t.Errorf("boolean 2: %v", err)
	}
}

func TestPluginMessages(t *testing.T) {
	req := AppendPluginRequest(nil, PluginRequest{MessageID: 7, Channel: []byte(VelocityChannel), Data: []byte{4}})
	pr, err := ParsePluginRequest(req)
	if err != nil || pr.MessageID != 7 || string(pr.Channel) != VelocityChannel || !bytes.Equal(pr.Data, []byte{4}) {
		t.Fatalf("ParsePluginRequest = %+v, %v", pr, err)
	}
	for _, resp := range []PluginResponse{{MessageID: 7, Successful: true, Data: []byte("abc")}, {MessageID: 300}} {
		got, err := ParsePluginResponse(AppendPluginResponse(nil, resp))
		if err != nil || got.MessageID != resp.MessageID || got.Successful != resp.Successful || !bytes.Equal(got.Data, resp.Data) {
			t.Errorf("ParsePluginResponse = %+v, %v, want %+v", got, err, resp)
		}
	}
	for name, body := range map[string][]byte{
		"unsuccessful with data": {PacketLoginPluginResponse, 1, 0, 'x'},
		"bad boolean":            {PacketLoginPluginResponse, 1, 2},
		"no boolean":             {PacketLoginPluginResponse, 1},
		"wrong id":               {PacketLoginStart, 1, 1},
	} {
		if _, err := ParsePluginResponse(body); !errors.Is(err, ErrBadPluginMessage) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := ParsePluginRequest([]byte{PacketLoginPluginRequest, 1, 0x7f}); !errors.Is(err, ErrBadPluginMessage) {
		t.Errorf("truncated channel: %v", err)
	}
	reason, err := ParseLoginDisconnect(AppendLoginDisconnect(nil, []byte(`{"text":"x"}`))[1:])
	if err != nil || string(reason) != `{"text":"x"}` {
		t.Errorf("ParseLoginDisconnect = %q, %v", reason, err)
	}
	if th, err := ParseSetCompression(AppendSetCompression(nil, 256)); err != nil || th != 256 {
		t.Errorf("Set Compression round trip = %d, %v", th, err)
	}
}

func TestVelocityForwarding(t *testing.T) {
	secret := []byte("s3cret")
	key := &PlayerKey{Expiry: 5, PublicKey: []byte("pk"), Signature: []byte("sg")}
	for _, info := range []VelocityInfo{
		{Version: VelocityDefault, Address: []byte("127.0.0.1"), UUID: testUUID, Name: []byte("Notch")},
		{Version: VelocityWithKey, Address: []byte("::1"), UUID: testUUID, Name: []byte("Notch"), Key: key,
			Properties: []Property{{Name: []byte("textures"), Value: []byte("v")}}},
		{Version: VelocityWithKeyV2, Address: []byte("10.0.0.1"), UUID: testUUID, Name: []byte("N"), Key: key, HasHolder: true, Holder: testUUID},
		{Version: VelocityLazySession, Address: []byte("10.0.0.1"), UUID: testUUID, Name: []byte("N")},
	} {
		data := AppendVelocityResponse(nil, secret, info)
		got, err := VerifyVelocityResponse(data, secret, VelocityMaxVersion)
		if err != nil || got.Version != info.Version || !bytes.Equal(got.Address, info.Address) || got.UUID != info.UUID ||
			!bytes.Equal(got.Name, info.Name) || len(got.Properties) != len(info.Properties) || (got.Key == nil) != (info.Key == nil) || got.Holder != info.Holder {
			t.Errorf("v%d: VerifyVelocityResponse = %+v, %v", info.Version, got, err)
		}
		if _, err := VerifyVelocityResponse(data, []byte("wrong"), VelocityMaxVersion); !errors.Is(err, ErrBadForwarding) {
			t.Errorf("v%d: wrong secret: %v", info.Version, err)
		}
		if _, err := VerifyVelocityResponse(data, secret, info.Version-1); info.Version > 1 && !errors.Is(err, ErrBadForwarding) {
			t.Errorf("v%d: version above the backend's: %v", info.Version, err)
		}
		flipped := bytes.Clone(data)
		flipped[len(flipped)-1] ^= 1
		if _, err := VerifyVelocityResponse(flipped, secret, VelocityMaxVersion); !errors.Is(err, ErrBadForwarding) {
			t.Errorf("v%d: tampered payload: %v", info.Version, err)
		}
	}
	if got, _ := VerifyVelocityResponse(AppendVelocityResponse(nil, secret, VelocityInfo{Version: VelocityWithKey, Name: []byte("N")}), secret, 4); got.Version != VelocityDefault {
		t.Errorf("a key version without a key is written as version %d, want 1", got.Version)
	}
	for _, tc := range []struct {
		requested, v int32
		key          *PlayerKey
		want         int32
	}{
		{1, 767, nil, 1}, {4, 767, nil, 4}, {3, 767, nil, 1}, {4, 340, nil, 1}, {4, Protocol1_19, key, 2},
		{4, Protocol1_19, nil, 1}, {4, ProtocolLoginUUIDOptional, key, 3}, {2, ProtocolLoginUUIDOptional, key, 1}, {9, 767, nil, 4},
	} {
		if got := VelocityVersionFor(tc.requested, tc.v, tc.key); got != tc.want {
			t.Errorf("VelocityVersionFor(%d, %d, key %t) = %d, want %d", tc.requested, tc.v, tc.key != nil, got, tc.want)
		}
	}
	for data, want := range map[string]int32{"": 1, "\x04": 4, "\x02": 2} {
		if got, err := ParseVelocityRequest([]byte(data)); err != nil || got != want {
			t.Errorf("ParseVelocityRequest(%q) = %d, %v", data, got, err)
		}
	}
	for _, data := range []string{"\x00", "\x01\x02"} {
		if _, err := ParseVelocityRequest([]byte(data)); !errors.Is(err, ErrBadForwarding) {
			t.Errorf("ParseVelocityRequest(%q): %v", data, err)
		}
	}
}

// zlibOf returns b deflated.
func zlibOf(b []byte) []byte {
	var buf bytes.Buffer
	w := zlib.NewWriter(&buf)
	_, _ = w.Write(b)
	_ = w.Close()
	return buf.Bytes()
}

func TestCompressor(t *testing.T) {
	var c Compressor
	small := AppendPluginResponse(nil, PluginResponse{MessageID: 1})
	big := append([]byte{0x12}, bytes.Repeat([]byte("payload "), 200)...)
	for _, threshold := range []int{-1, 0, 64, 1 << 20} {
		for _, p := range [][]byte{small, big} {
			frame := c.AppendFrame(nil, p, threshold)
			n, hl, err := SplitFrame(frame, MaxFrameLength)
			if err != nil || n != len(frame) {
				t.Fatalf("threshold %d: frame %x does not split whole: %d, %v", threshold, frame[:min(8, len(frame))], n, err)
			}
			if threshold < 0 {
				if !bytes.Equal(frame[hl:], p) {
					t.Errorf("plain frame changed the packet")
				}
				continue
			}
			got, err := c.Inflate(frame[hl:], threshold, MaxServerboundUncompressed)
			if err != nil || !bytes.Equal(got, p) {
				t.Errorf("threshold %d: Inflate = %d bytes, %v; want %d", threshold, len(got), err, len(p))
			}
			if compressed := len(p) >= threshold; compressed != (frame[hl] != 0) {
				t.Errorf("threshold %d, %d bytes: data length byte %d", threshold, len(p), frame[hl])
			}
		}
	}
	bomb := bytes.Repeat([]byte{0}, MaxServerboundUncompressed+1)
	zb := zlibOf(bomb)
	for name, tc := range map[string]struct {
		body   []byte
		reason string
	}{
		"declared past the limit": {append(AppendVarInt(nil, MaxServerboundUncompressed+1), zb...), ReasonInflateTooLarge},
		"inflates past declared":  {append(AppendVarInt(nil, 1000), zb...), ReasonBadInflate},
		"inflates short":          {append(AppendVarInt(nil, 1000), zlibOf(big[:500])...), ReasonBadInflate},
		"below threshold":         {append(AppendVarInt(nil, 10), zlibOf(big[:10])...), ReasonBadCompression},
		"corrupt":                 {append(AppendVarInt(nil, 1000), 1, 2, 3, 4), ReasonBadInflate},
		"negative":                {AppendVarInt(nil, -1), ReasonBadCompression},
	} {
		var c Compressor
		_, err := c.Inflate(tc.body, 64, MaxServerboundUncompressed)
		if got := ErrorReason(err); got != tc.reason {
			t.Errorf("%s: reason %q (%v), want %q", name, got, err, tc.reason)
		}
		if cap(c.inflated) > 1001 {
			t.Errorf("%s: the inflate buffer grew to %d bytes, past the declared 1000", name, cap(c.inflated))
		}
	}
}

func TestCompressorInflateAllocs(t *testing.T) {
	var c Compressor
	frame := c.AppendFrame(nil, append([]byte{0x12}, bytes.Repeat([]byte("x"), 300)...), 64)
	_, hl, _ := SplitFrame(frame, MaxFrameLength)
	body := frame[hl:]
	if _, err := c.Inflate(body, 64, MaxServerboundUncompressed); err != nil {
		t.Fatal(err)
	}
	// The zlib reader's Reset keeps its window; only its small per-stream
	// state is rebuilt, so a reused Compressor allocates little per frame.
	if n := testing.AllocsPerRun(50, func() { _, _ = c.Inflate(body, 64, MaxServerboundUncompressed) }); n > 4 {
		t.Errorf("Inflate allocates %v times per frame, want at most 4", n)
	}
}
