package handover

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

var testKey = Key{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}

func onlineState() State {
	return State{
		Listener: 1, Listen: "127.0.0.1:25577", IP: "192.0.2.9", Host: "play.example", User: "Alice", Protocol: 764,
		Group: "main", Backend: "127.0.0.1:25565", Opened: 1234, C2S: Scanner{Remaining: 3, Length: 9}, S2C: Scanner{Shift: 7},
		ClientIn: []byte{1, 2, 3}, BackendIn: []byte("backend"), ToClient: []byte{9, 9}, ToBackend: []byte("to backend"),
		Cluster: &Cluster{Token: "t", Record: "r"},
		Login: &Login{ClientThreshold: 256, BackendThreshold: 256, UUID: [16]byte{0x3f, 0x1e}, Name: "Alice",
			Properties: []Property{{Name: "textures", Value: "dGV4", Signature: "c2ln"}}},
		Cipher: &Cipher{Key: testKey, Encrypt: [16]byte{1, 1, 1}, Decrypt: [16]byte{2, 2, 2}},
	}
}

// TestEncodeDecodeRoundTrip: every field of a State comes back from its
// encoding, in each version that can carry it.
func TestEncodeDecodeRoundTrip(t *testing.T) {
	offline := onlineState()
	offline.Cipher = nil
	relayed := onlineState()
	relayed.Cipher, relayed.Login = nil, nil
	for _, tc := range []struct {
		name string
		st   State
		v    int
	}{
		{"online, v2", onlineState(), StateV2},
		{"offline, v2", offline, StateV2},
		{"relayed, v2", relayed, StateV2},
		{"relayed, v1", relayed, StateV1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := Encode(&tc.st, tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if tc.v == StateV1 && data[0] != '{' || tc.v == StateV2 && data[0] != StateV2 {
				t.Fatalf("version %d message starts with %#x", tc.v, data[0])
			}
			got, err := Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.st) {
				t.Fatalf("decoded\n%#v\nwant\n%#v", got, tc.st)
			}
		})
	}
}

// TestEncodeV1: version 1 is the JSON an older process reads; it drops
// Login for a session that does not need it, and refuses one that does.
func TestEncodeV1(t *testing.T) {
	st := onlineState()
	st.Cipher = nil
	data, err := Encode(&st, StateV1)
	if err != nil {
		t.Fatal(err)
	}
	var old map[string]any // what a version 1 process reads: plain JSON
	if err := json.Unmarshal(data, &old); err != nil {
		t.Fatalf("version 1 is not JSON: %v", err)
	}
	if _, ok := old["login"]; ok {
		t.Fatalf("version 1 carries the login: %s", data)
	}
	for _, tc := range []struct {
		name string
		edit func(*State)
	}{
		{"encrypted", func(*State) {}},
		{"thresholds differ", func(s *State) { s.Cipher = nil; s.Login.BackendThreshold = -1 }},
	} {
		st := onlineState()
		tc.edit(&st)
		if !NeedsV2(st.Login, st.Cipher != nil) {
			t.Errorf("%s: NeedsV2 false", tc.name)
		}
		if _, err := Encode(&st, StateV1); err == nil {
			t.Errorf("%s: encoded as version 1", tc.name)
		}
	}
	if _, err := Encode(&st, 3); err == nil {
		t.Fatal("encoded as version 3")
	}
}

// TestVersion: what to send a process that reads up to v.
func TestVersion(t *testing.T) {
	for v, want := range map[int]int{0: 1, 1: 1, 2: 2, 3: 2, -1: 1} {
		if got := Version(v); got != want {
			t.Errorf("Version(%d) = %d, want %d", v, got, want)
		}
	}
}

// TestDecodeRefuses: malformed, truncated, later and inconsistent
// messages are errors, never a State.
func TestDecodeRefuses(t *testing.T) {
	st := onlineState()
	good, err := Encode(&st, StateV2)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(&st)
	v2 := func(js []byte, tail ...byte) []byte {
		out := append([]byte{StateV2}, byte(len(js)))
		if len(js) >= 0x80 {
			out = append([]byte{StateV2}, byte(len(js))|0x80, byte(len(js)>>7))
		}
		return append(append(out, js...), tail...)
	}
	noCipher := []byte(`{"listener":0,"raw":false,"ip":"x","group":"g","backend":"b","c2s":{},"s2c":{}}`)
	for _, tc := range []struct {
		name, want string
		data       []byte
	}{
		{"empty", "empty", nil},
		{"version 3", "version 3", []byte{3, 0}},
		{"not JSON", "version 1", []byte("{nope")},
		{"truncated tail", "flags", good[:len(good)-1]},
		{"no flags", "no flags", v2(js)},
		{"extra bytes", "flags", append(bytes.Clone(good), 0)},
		{"unknown flags", "flags 0x2", v2(noCipher, 2)},
		{"length past the end", "JSON length", []byte{StateV2, 0x7f, '{', '}', 0}},
		{"length overflows", "JSON length", []byte{StateV2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
		{"bad varint", "JSON length", []byte{StateV2, 0x80}},
		{"JSON with trailing data", "version 2", v2([]byte(`{} {}`), 0)},
		{"threshold below -1", "thresholds", v2([]byte(`{"login":{"client_threshold":-2,"backend_threshold":-2}}`), 0)},
		{"cipher without login", "without a login", v2([]byte(`{}`), append([]byte{flagCipher}, make([]byte, cipherBytes)...)...)},
		{"too big", "at most", make([]byte, MaxState+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Decode: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestDecodeV1FromAnOlderProcess: a version 1 message is decoded as such,
// with no login even if it names one.
func TestDecodeV1FromAnOlderProcess(t *testing.T) {
	st, err := Decode([]byte(`{"listener":2,"raw":true,"ip":"192.0.2.1","group":"g","backend":"b","c2s":{},"s2c":{},"login":{"name":"x"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if st.Listener != 2 || !st.Raw || st.Login != nil || st.Cipher != nil {
		t.Fatalf("decoded %+v", st)
	}
}

// TestCipherRedacted: the key shows nowhere a State or Cipher can be
// written: fmt verbs, JSON (the version 1 encoding, and zerolog's), text.
func TestCipherRedacted(t *testing.T) {
	st := onlineState()
	secretHex := fmt.Sprintf("%x", [16]byte(testKey))
	var logged bytes.Buffer
	zl := zerolog.New(&logged)
	zl.Info().Interface("state", st).Interface("cipher", st.Cipher).Interface("key", st.Cipher.Key).Msg("x")
	js, _ := json.Marshal(st.Cipher)
	text, _ := st.Cipher.Key.MarshalText()
	for name, out := range map[string]string{
		"%v": fmt.Sprintf("%v", st), "%+v": fmt.Sprintf("%+v", st), "%#v": fmt.Sprintf("%#v", st),
		"%x key": fmt.Sprintf("%x", st.Cipher.Key), "%v cipher": fmt.Sprintf("%v", st.Cipher), "%#v cipher": fmt.Sprintf("%#v", *st.Cipher),
		"%s key": fmt.Sprintf("%s", st.Cipher.Key), "%d key": fmt.Sprintf("%d", st.Cipher.Key),
		"json": string(js), "text": string(text), "zerolog": logged.String(),
	} {
		if strings.Contains(out, secretHex) || strings.Contains(out, "222 173 190 239") || strings.Contains(out, "222, 173") ||
			strings.Contains(out, "0xde, 0xad") || strings.Contains(out, "3q2+7") {
			t.Errorf("%s shows the key: %s", name, out)
		}
		if !strings.Contains(out, redacted) && !strings.HasPrefix(name, "%x") && !strings.HasPrefix(name, "%d") {
			t.Errorf("%s: %s, want %s", name, out, redacted)
		}
	}
	// The state message is where the key goes, and only in version 2's tail.
	data, _ := Encode(&st, StateV2)
	if !bytes.Contains(data, testKey[:]) {
		t.Fatal("the version 2 message does not carry the key")
	}
}

// FuzzDecode: Decode never panics on any input, and what it accepts
// encodes to a message that decodes to the same State.
func FuzzDecode(f *testing.F) {
	st := onlineState()
	for _, v := range []int{StateV1, StateV2} {
		s := st
		if v == StateV1 {
			s.Login, s.Cipher = nil, nil
		}
		data, _ := Encode(&s, v)
		f.Add(data)
	}
	f.Add([]byte{StateV2, 2, '{', '}', 0})
	f.Add([]byte{StateV2, 2, '{', '}', 1})
	f.Add([]byte("{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := Decode(data)
		if err != nil {
			return
		}
		again, err := Encode(&st, StateV2)
		if err != nil {
			t.Fatalf("a decoded state does not encode: %v", err)
		}
		st2, err := Decode(again)
		if err != nil {
			t.Fatalf("re-encoded state does not decode: %v", err)
		}
		if !reflect.DeepEqual(normalized(st), normalized(st2)) {
			t.Fatalf("round trip changed the state:\n%#v\n%#v", st, st2)
		}
	})
}

// normalized makes empty byte slices nil (JSON's omitempty drops them).
func normalized(s State) State {
	for _, b := range []*[]byte{&s.ClientIn, &s.BackendIn, &s.ToClient, &s.ToBackend} {
		if len(*b) == 0 {
			*b = nil
		}
	}
	if s.Login != nil && len(s.Login.Properties) == 0 {
		l := *s.Login
		l.Properties = nil
		s.Login = &l
	}
	return s
}
