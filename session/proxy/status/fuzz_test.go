package status

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/proxy/config"
)

// FuzzBackendReply: whatever JSON a backend sends, FromBackend either
// refuses it or builds an answer whose Status Response frames carry valid
// JSON (the backend's own bytes when nothing is rewritten) and whose legacy
// kick packets decode, in every mode.
func FuzzBackendReply(f *testing.F) {
	for _, s := range []string{
		`{"version":{"name":"1.20.2","protocol":764},"players":{"max":20,"online":3},"description":{"text":"hi","color":"red"}}`,
		`{"description":"§aplain"}`, `{}`, `[]`, `{"version":{"protocol":"x"}}`, `{"players":{"online":1e3}}`,
	} {
		f.Add([]byte(s), int64(-1), false)
		f.Add([]byte(s), int64(5), true)
	}
	f.Fuzz(func(t *testing.T, js []byte, online int64, client bool) {
		mode := config.StatusProtocolBackend
		if client {
			mode = config.StatusProtocolClient
		}
		r, err := FromBackend(js, Players{Online: online}, mode)
		if err != nil {
			if mc.ErrorReason(err) != mc.ReasonBadStatusJSON {
				t.Fatalf("FromBackend: %v", err)
			}
			return
		}
		frame := r.AppendResponse(nil, 47)
		n, hl, err := mc.SplitFrame(frame, mc.MaxFrameLength)
		if err != nil || n != len(frame) {
			t.Fatalf("response frame: %d of %d, %v", n, len(frame), err)
		}
		_, data, _ := mc.ParsePacketID(frame[hl:])
		rd := mc.NewReader(data)
		got, err := rd.ReadString(mc.MaxFrameLength)
		if err != nil || !json.Valid(got) {
			t.Fatalf("response JSON %q: %v", got, err)
		}
		if !client && online < 0 && !bytes.Equal(got, js) {
			t.Fatalf("backend mode changed the JSON: %q to %q", js, got)
		}
		st, err := mc.ParseStatusJSON(got)
		if err != nil {
			t.Fatalf("answer %s does not parse: %v", got, err)
		}
		if client && st.Protocol != 47 || online >= 0 && st.Online != online {
			t.Fatalf("answer %s: protocol %d, online %d", got, st.Protocol, st.Online)
		}
		for _, k := range []mc.LegacyPingKind{mc.LegacyPingBeta, mc.LegacyPing14, mc.LegacyPing16} {
			kick := mc.AppendLegacyKick(nil, k, r.LegacyStatus(78))
			if _, n, err := mc.ParseLegacyKick(kick); err != nil || n != len(kick) {
				t.Fatalf("legacy %v kick: %d of %d, %v", k, n, len(kick), err)
			}
		}
	})
}
