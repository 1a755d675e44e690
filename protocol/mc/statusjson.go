package mc

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
)

// StatusInfo is what a proxy reads from the JSON of a Status Response.
type StatusInfo struct {
	// VersionName and Protocol are version.name and version.protocol.
	VersionName string
	Protocol    int32
	// Online and Max are players.online and players.max.
	Online, Max int64
	// Description is the raw JSON of description (a chat component), nil
	// when there is none.
	Description json.RawMessage
}

// ParseStatusJSON reads the fields of a status JSON that a proxy uses. The
// JSON must be an object; version, players and their fields may be missing
// or null (they read as empty and 0, as clients take them) but must have the
// right types when present. Keys match exactly, as in the game's client.
// Violations are reported with ReasonBadStatusJSON.
func ParseStatusJSON(js []byte) (StatusInfo, error) {
	top, err := jsonObject(js, "status")
	if err != nil {
		return StatusInfo{}, err
	}
	if top == nil {
		return StatusInfo{}, statusJSONError("not a JSON object")
	}
	var st StatusInfo
	version, err := jsonObject(top["version"], "version")
	if err != nil {
		return StatusInfo{}, err
	}
	players, err := jsonObject(top["players"], "players")
	if err != nil {
		return StatusInfo{}, err
	}
	for _, f := range []struct {
		raw  json.RawMessage
		name string
		dst  any
	}{
		{version["name"], "version.name", &st.VersionName},
		{version["protocol"], "version.protocol", &st.Protocol},
		{players["online"], "players.online", &st.Online},
		{players["max"], "players.max", &st.Max},
	} {
		if f.raw == nil || string(f.raw) == "null" {
			continue
		}
		if err := json.Unmarshal(f.raw, f.dst); err != nil {
			return StatusInfo{}, statusJSONError(f.name + ": " + err.Error())
		}
	}
	if d := top["description"]; d != nil && string(d) != "null" {
		st.Description = d
	}
	return st, nil
}

// jsonObject decodes raw, a JSON object, null or nothing (both give a nil
// map), naming it what in errors.
func jsonObject(raw json.RawMessage, what string) (map[string]json.RawMessage, error) {
	if raw == nil {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		if what == "status" {
			return nil, statusJSONError(err.Error())
		}
		return nil, statusJSONError(what + ": " + err.Error())
	}
	return m, nil
}

func statusJSONError(text string) *ProtocolError {
	return &ProtocolError{Reason: ReasonBadStatusJSON, Packet: "status response", Field: text, kind: kindSentinel}
}

// SplitStatusJSON re-encodes a status JSON object so that its
// version.protocol number comes last: head + decimal protocol + tail is the
// status again, with every other value kept byte for byte (keys are sorted,
// "version" last and "protocol" last in it). This lets a proxy answer each
// client with its own protocol number without re-encoding the JSON. When
// online is not negative it replaces players.online (players is created if
// missing). Violations are reported with ReasonBadStatusJSON.
func SplitStatusJSON(js []byte, online int64) (head, tail []byte, err error) {
	return SplitStatusJSONPlayers(js, online, nil)
}

// SplitStatusJSONPlayers is SplitStatusJSON that also replaces
// players.sample with sample, a JSON array, unless sample is nil (a proxy
// of a network lists players of the whole network). sample must be valid
// JSON; it is copied as it is.
func SplitStatusJSONPlayers(js []byte, online int64, sample []byte) (head, tail []byte, err error) {
	top, err := jsonObject(js, "status")
	if err != nil {
		return nil, nil, err
	}
	if top == nil {
		return nil, nil, statusJSONError("not a JSON object")
	}
	version, err := jsonObject(top["version"], "version")
	if err != nil {
		return nil, nil, err
	}
	delete(top, "version")
	delete(version, "protocol")
	if online >= 0 || sample != nil {
		players, err := jsonObject(top["players"], "players")
		if err != nil {
			return nil, nil, err
		}
		if players == nil {
			players = map[string]json.RawMessage{}
		}
		if online >= 0 {
			players["online"] = strconv.AppendInt(nil, online, 10)
		}
		if sample != nil {
			players["sample"] = sample
		}
		top["players"] = appendObject(nil, players)
	}
	head = append(appendMembers(append(head, '{'), top), `"version":`...)
	head = append(appendMembers(append(head, '{'), version), `"protocol":`...)
	return head, []byte("}}"), nil
}

// appendObject appends m as a JSON object, keys sorted.
func appendObject(dst []byte, m map[string]json.RawMessage) []byte {
	dst = appendMembers(append(dst, '{'), m)
	if len(m) > 0 {
		dst = dst[:len(dst)-1] // the last comma
	}
	return append(dst, '}')
}

// appendMembers appends each member of m as "key":value, keys sorted, each
// followed by a comma.
func appendMembers(dst []byte, m map[string]json.RawMessage) []byte {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		key, _ := json.Marshal(k) // a string always marshals
		dst = append(append(append(dst, key...), ':'), m[k]...)
		dst = append(dst, ',')
	}
	return dst
}
