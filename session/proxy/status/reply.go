package status

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/proxy/config"
)

// Reply is one status answer: its JSON, split around the number of
// version.protocol, and what a legacy ping is told.
type Reply struct {
	head, tail []byte // the JSON is head, the protocol number, tail
	client     bool   // the protocol number is each client's own
	frame      []byte // the whole Status Response, when !client
	legacy     mc.LegacyStatus
}

// json returns the status JSON with protocol v.
func (r *Reply) json(v int32) []byte {
	js := make([]byte, 0, len(r.head)+11+len(r.tail))
	js = append(js, r.head...)
	js = strconv.AppendInt(js, int64(v), 10)
	return append(js, r.tail...)
}

// AppendResponse appends the Status Response for a client of protocol v to dst.
func (r *Reply) AppendResponse(dst []byte, v int32) []byte {
	if !r.client {
		return append(dst, r.frame...)
	}
	return mc.AppendStatusResponse(dst, r.json(v))
}

// LegacyStatus returns what a legacy ping from a client of protocol v (0
// when the ping does not say, as before 1.6) is told.
func (r *Reply) LegacyStatus(v int32) mc.LegacyStatus {
	st := r.legacy
	if r.client && v != 0 {
		st.Protocol = v
	}
	return st
}

// UnknownHostText is the description of the proxy's answer for a host
// without a route.
const UnknownHostText = "Unknown host"

// Offline is the proxy's own answer, from status.offline, with text (§
// codes or a chat component in JSON) as its description.
func Offline(o config.OfflineStatusConfig, text string) *Reply {
	head := append([]byte(`{"description":`), ChatJSON(text)...)
	if uri := o.FaviconURI(); uri != "" {
		head = append(head, `,"favicon":"`...)
		head = append(head, uri...) // base64 and a data: prefix: nothing to escape
		head = append(head, '"')
	}
	head = fmt.Appendf(head, `,"players":{"max":%d,"online":%d},"version":{"name":`, o.Max, o.Online)
	name, _ := json.Marshal(o.VersionName) // a string always marshals
	head = append(append(head, name...), `,"protocol":`...)
	r := &Reply{
		head: head, tail: []byte("}}"), client: o.Protocol == 0,
		legacy: mc.LegacyStatus{Protocol: int32(o.Protocol), Version: o.VersionName, MOTD: legacyText(text),
			Online: int64(o.Online), Max: int64(o.Max)},
	}
	if !r.client {
		r.frame = mc.AppendStatusResponse(nil, r.json(int32(o.Protocol)))
	}
	return r
}

// legacyText is a configured text as legacy text: a chat component in JSON
// rendered with § codes, anything else as it is.
func legacyText(text string) string {
	if !config.IsChatJSON(text) {
		return text
	}
	s, err := mc.LegacyText([]byte(text))
	if err != nil {
		return text // refused by config.Parse; not reached
	}
	return s
}

// ChatJSON is a Minecraft chat component with msg as its text, or msg
// itself when it is a chat component in JSON (validated by config.Parse).
func ChatJSON(msg string) []byte {
	if config.IsChatJSON(msg) {
		var b bytes.Buffer
		if json.Compact(&b, []byte(msg)) == nil {
			return b.Bytes()
		}
	}
	quoted, _ := json.Marshal(msg) // a string always marshals
	return append(append([]byte(`{"text":`), quoted...), '}')
}

// Players is what a status answer reports of the network's players (the
// cluster's), in place of the backend's.
type Players struct {
	Online int64  // replaces players.online when not negative
	Sample []byte // a JSON array that replaces players.sample; nil keeps the backend's
}

// FromBackend builds the answer from a backend's status JSON, with pl's
// players in place of the backend's and the protocol number as mode says.
func FromBackend(js []byte, pl Players, mode config.StatusProtocol) (*Reply, error) {
	online := pl.Online
	info, err := mc.ParseStatusJSON(js)
	if err != nil {
		return nil, err
	}
	r := &Reply{
		client: mode == config.StatusProtocolClient,
		legacy: mc.LegacyStatus{Protocol: info.Protocol, Version: info.VersionName, Online: info.Online, Max: info.Max},
	}
	if len(info.Description) > 0 {
		if text, err := mc.LegacyText(info.Description); err == nil {
			r.legacy.MOTD = text
		}
	}
	if online >= 0 {
		r.legacy.Online = online
	}
	if !r.client && online < 0 && pl.Sample == nil {
		r.frame = mc.AppendStatusResponse(nil, js) // as the backend wrote it
		return r, nil
	}
	if r.head, r.tail, err = mc.SplitStatusJSONPlayers(js, online, pl.Sample); err != nil {
		return nil, err
	}
	if !r.client {
		r.frame = mc.AppendStatusResponse(nil, r.json(info.Protocol))
		r.head, r.tail = nil, nil
	}
	return r, nil
}
