package mc

import (
	"bytes"
	"reflect"
	"testing"
)

// TestServerHashVectors checks the signed hex digests known from the
// protocol's documentation (the SHA-1 of the names alone).
func TestServerHashVectors(t *testing.T) {
	for name, want := range map[string]string{
		"Notch": "4ed1f46bbe04bc756bcb17c0c7ce3e4632f06a48",
		"jeb_":  "-7c9d5b0044c130109a5d7b5fb5c317c02b4e28c1",
		"simon": "88e16a1019277b15d58faf0541e11910eb756f6",
	} {
		if got := string(AppendServerHash(nil, []byte(name), nil, nil)); got != want {
			t.Errorf("hash of %q = %s, want %s", name, got, want)
		}
	}
	// The three parts are hashed as one string.
	a := AppendServerHash(nil, nil, []byte("No"), []byte("tch"))
	if string(a) != "4ed1f46bbe04bc756bcb17c0c7ce3e4632f06a48" {
		t.Errorf("split hash = %s", a)
	}
}

func TestAppendSignedHexEdges(t *testing.T) {
	var zero, minusOne, minInt, one [20]byte
	for i := range minusOne {
		minusOne[i] = 0xff
	}
	minInt[0] = 0x80
	one[19] = 1
	for _, c := range []struct {
		d    [20]byte
		want string
	}{
		{zero, "0"},
		{one, "1"},
		{minusOne, "-1"},
		{minInt, "-8000000000000000000000000000000000000000"},
	} {
		if got := string(appendSignedHex([]byte("x"), c.d)); got != "x"+c.want {
			t.Errorf("appendSignedHex(%x) = %s, want x%s", c.d, got, c.want)
		}
	}
}

var encryptionVersions = []int32{5, 47, 340, 758, 759, 760, 761, 765, 766, 767, 774}

func TestEncryptionRequestRoundTrip(t *testing.T) {
	req := EncryptionRequest{ServerID: []byte{}, PublicKey: bytes.Repeat([]byte{0x30}, 162), VerifyToken: []byte{1, 2, 3, 4}, ShouldAuthenticate: true}
	for _, v := range encryptionVersions {
		for _, auth := range []bool{true, false} {
			in := req
			in.ShouldAuthenticate = auth
			got, err := ParseEncryptionRequest(body(t, AppendEncryptionRequest(nil, v, in)), v)
			if err != nil {
				t.Fatalf("version %d: %v", v, err)
			}
			if v < encryptionAuthenticates {
				in.ShouldAuthenticate = true // not carried: always true
			}
			if !reflect.DeepEqual(got, in) {
				t.Fatalf("version %d: %+v, want %+v", v, got, in)
			}
		}
	}
}

// TestEncryptionWireFormat pins the bytes of each layout.
func TestEncryptionWireFormat(t *testing.T) {
	req := EncryptionRequest{ServerID: []byte{}, PublicKey: []byte{0xaa, 0xbb}, VerifyToken: []byte{0x01}, ShouldAuthenticate: true}
	resp := EncryptionResponse{SharedSecret: []byte{0xcc}, VerifyToken: []byte{0xdd, 0xee}}
	signed := EncryptionResponse{SharedSecret: []byte{0xcc}, Signed: true, Salt: 0x0102030405060708, Signature: []byte{0x99}}
	for _, c := range []struct {
		name string
		got  []byte
		want []byte
	}{
		{"request 1.7.10", AppendEncryptionRequest(nil, 5, req), []byte{9, 1, 0, 0, 2, 0xaa, 0xbb, 0, 1, 1}},
		{"request 1.8", AppendEncryptionRequest(nil, 47, req), []byte{7, 1, 0, 2, 0xaa, 0xbb, 1, 1}},
		{"request 1.20.5", AppendEncryptionRequest(nil, 766, req), []byte{8, 1, 0, 2, 0xaa, 0xbb, 1, 1, 1}},
		{"response 1.7.10", AppendEncryptionResponse(nil, 5, resp), []byte{8, 1, 0, 1, 0xcc, 0, 2, 0xdd, 0xee}},
		{"response 1.18.2", AppendEncryptionResponse(nil, 758, resp), []byte{6, 1, 1, 0xcc, 2, 0xdd, 0xee}},
		{"response 1.19 token", AppendEncryptionResponse(nil, 759, resp), []byte{7, 1, 1, 0xcc, 1, 2, 0xdd, 0xee}},
		{"response 1.19.2 signed", AppendEncryptionResponse(nil, 760, signed), []byte{14, 1, 1, 0xcc, 0, 1, 2, 3, 4, 5, 6, 7, 8, 1, 0x99}},
		{"response 1.19.3", AppendEncryptionResponse(nil, 761, resp), []byte{6, 1, 1, 0xcc, 2, 0xdd, 0xee}},
	} {
		if !bytes.Equal(c.got, c.want) {
			t.Errorf("%s: % x, want % x", c.name, c.got, c.want)
		}
	}
}

func TestEncryptionResponseRoundTrip(t *testing.T) {
	plain := EncryptionResponse{SharedSecret: bytes.Repeat([]byte{7}, 128), VerifyToken: bytes.Repeat([]byte{9}, 128)}
	signed := EncryptionResponse{SharedSecret: bytes.Repeat([]byte{7}, 128), Signed: true, Salt: -5, Signature: bytes.Repeat([]byte{3}, 256)}
	for _, v := range encryptionVersions {
		for _, in := range []EncryptionResponse{plain, signed} {
			got, err := ParseEncryptionResponse(body(t, AppendEncryptionResponse(nil, v, in)), v)
			if err != nil {
				t.Fatalf("version %d: %v", v, err)
			}
			want := in
			if in.Signed && (v < encryptionSaltFirst || v > encryptionSaltLast) {
				// Not expressible: the token (nil) goes out and comes back empty.
				want = EncryptionResponse{SharedSecret: in.SharedSecret, VerifyToken: []byte{}}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("version %d: %+v, want %+v", v, got, want)
			}
		}
	}
}

func TestEncryptionMalformed(t *testing.T) {
	for _, c := range []struct {
		name  string
		v     int32
		body  []byte
		isReq bool
	}{
		{"request wrong id", 47, packet(0x02, str(""), varint(0), varint(0)), true},
		{"request truncated key", 47, packet(0x01, str(""), varint(5), []byte{1, 2}), true},
		{"request long server id", 47, packet(0x01, str("123456789012345678901"), varint(0), varint(0)), true},
		{"request key too long", 47, packet(0x01, str(""), varint(MaxEncryptionArray+1)), true},
		{"request negative 1.7 length", 5, packet(0x01, str(""), []byte{0xff, 0xff}), true},
		{"request missing auth bool", 766, packet(0x01, str(""), varint(0), varint(0)), true},
		{"request bad auth bool", 766, packet(0x01, str(""), varint(0), varint(0), []byte{2}), true},
		{"request trailing", 765, packet(0x01, str(""), varint(0), varint(0), []byte{1}), true},
		{"response empty", 47, nil, false},
		{"response wrong id", 47, packet(0x00, varint(0), varint(0)), false},
		{"response negative length", 47, packet(0x01, varint(-1)), false},
		{"response truncated token", 761, packet(0x01, varint(1), []byte{1}, varint(4), []byte{1}), false},
		{"response 1.7 truncated short", 5, packet(0x01, []byte{0}), false},
		{"response 1.19 bad flag", 759, packet(0x01, varint(1), []byte{1}, []byte{7}), false},
		{"response 1.19 truncated salt", 759, packet(0x01, varint(1), []byte{1}, []byte{0}, []byte{1, 2, 3}), false},
		{"response trailing", 760, packet(0x01, varint(0), []byte{1}, varint(0), []byte{0}), false},
		{"response signature too long", 760, packet(0x01, varint(0), []byte{0}, make([]byte, 8), varint(MaxEncryptionArray+1)), false},
	} {
		var err error
		if c.isReq {
			_, err = ParseEncryptionRequest(c.body, c.v)
		} else {
			_, err = ParseEncryptionResponse(c.body, c.v)
		}
		t.Run(c.name, func(t *testing.T) { checkReason(t, err, ReasonBadEncryption) })
	}
}

func TestEncryptionZeroAllocs(t *testing.T) {
	req := body(t, AppendEncryptionRequest(nil, 766, EncryptionRequest{PublicKey: make([]byte, 162), VerifyToken: make([]byte, 4)}))
	resp := body(t, AppendEncryptionResponse(nil, 760, EncryptionResponse{SharedSecret: make([]byte, 128), VerifyToken: make([]byte, 128)}))
	scratch := make([]byte, 0, 512)
	var sink int
	for name, f := range map[string]func(){
		"ParseEncryptionRequest": func() {
			r, _ := ParseEncryptionRequest(req, 766)
			sink += len(r.PublicKey)
		},
		"ParseEncryptionResponse": func() {
			r, _ := ParseEncryptionResponse(resp, 760)
			sink += len(r.VerifyToken)
		},
		"AppendEncryptionRequest into capacity": func() {
			sink += len(AppendEncryptionRequest(scratch[:0], 766, EncryptionRequest{PublicKey: req[:162]}))
		},
	} {
		if a := testing.AllocsPerRun(100, f); a != 0 {
			t.Errorf("%s: %v allocs per run, want 0", name, a)
		}
	}
	_ = sink
}

// fuzzVersion maps a fuzzed byte onto the versions whose layouts differ.
func fuzzVersion(b byte) int32 { return encryptionVersions[int(b)%len(encryptionVersions)] }

func FuzzParseEncryptionRequest(f *testing.F) {
	f.Add(body(f, AppendEncryptionRequest(nil, 766, EncryptionRequest{PublicKey: []byte{1, 2}, VerifyToken: []byte{3}})), byte(8))
	f.Add(body(f, AppendEncryptionRequest(nil, 5, EncryptionRequest{PublicKey: []byte{1, 2}, VerifyToken: []byte{3}})), byte(0))
	f.Add([]byte{1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}, byte(1))
	f.Fuzz(func(t *testing.T, b []byte, vb byte) {
		v := fuzzVersion(vb)
		req, err := ParseEncryptionRequest(b, v)
		if err != nil {
			checkReason(t, err, ReasonBadEncryption)
			return
		}
		if len(req.PublicKey) > MaxEncryptionArray || len(req.VerifyToken) > MaxEncryptionArray {
			t.Fatalf("arrays past the bound: %d, %d", len(req.PublicKey), len(req.VerifyToken))
		}
		again, err := ParseEncryptionRequest(body(t, AppendEncryptionRequest(nil, v, req)), v)
		if err != nil || !reflect.DeepEqual(again, req) {
			t.Fatalf("re-encoded %+v parses as %+v, %v", req, again, err)
		}
	})
}

func FuzzParseEncryptionResponse(f *testing.F) {
	f.Add(body(f, AppendEncryptionResponse(nil, 760, EncryptionResponse{SharedSecret: []byte{1}, Signed: true, Signature: []byte{2}})), byte(5))
	f.Add(body(f, AppendEncryptionResponse(nil, 5, EncryptionResponse{SharedSecret: []byte{1}, VerifyToken: []byte{2}})), byte(0))
	f.Add(body(f, AppendEncryptionResponse(nil, 761, EncryptionResponse{SharedSecret: []byte{1}, VerifyToken: []byte{2}})), byte(6))
	f.Fuzz(func(t *testing.T, b []byte, vb byte) {
		v := fuzzVersion(vb)
		e, err := ParseEncryptionResponse(b, v)
		if err != nil {
			checkReason(t, err, ReasonBadEncryption)
			return
		}
		if len(e.SharedSecret) > MaxEncryptionArray || len(e.VerifyToken) > MaxEncryptionArray || len(e.Signature) > MaxEncryptionArray {
			t.Fatalf("arrays past the bound: %+v", e)
		}
		again, err := ParseEncryptionResponse(body(t, AppendEncryptionResponse(nil, v, e)), v)
		if err != nil || !reflect.DeepEqual(again, e) {
			t.Fatalf("re-encoded %+v parses as %+v, %v", e, again, err)
		}
	})
}
