package mc

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// minecraftData is node-minecraft-protocol's copy of minecraft-data, when
// internal/testkit/nodemc's npm install has run.
const minecraftData = "../../internal/testkit/nodemc/js/node_modules/minecraft-data/minecraft-data/data"

// TestConfigPacketsAgainstMinecraftData checks every row of the table, for
// each release minecraft-data knows from 1.20.2 on, against its
// protocol.json. It skips without the npm install, except under CI=true.
func TestConfigPacketsAgainstMinecraftData(t *testing.T) {
	paths, err := os.ReadFile(filepath.Join(minecraftData, "dataPaths.json"))
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("minecraft-data is not installed (npm ci --prefix internal/testkit/nodemc/js): %v", err)
		}
		t.Skipf("minecraft-data is not installed (npm ci --prefix internal/testkit/nodemc/js): %v", err)
	}
	var dp struct {
		PC map[string]struct {
			Protocol string `json:"protocol"`
		} `json:"pc"`
	}
	mustJSON(t, paths, &dp)
	var versions []struct {
		MinecraftVersion string `json:"minecraftVersion"`
		Version          int32  `json:"version"`
		ReleaseType      string `json:"releaseType"`
	}
	mustJSON(t, readFile(t, filepath.Join(minecraftData, "pc/common/protocolVersions.json")), &versions)
	checked := 0
	for _, v := range versions {
		if v.ReleaseType != "release" || v.Version < Protocol1_20_2 || dp.PC[v.MinecraftVersion].Protocol == "" {
			continue
		}
		ids := packetIDs(t, filepath.Join(minecraftData, dp.PC[v.MinecraftVersion].Protocol, "protocol.json"))
		p, ok := ConfigPacketsOf(v.Version)
		if !ok {
			t.Fatalf("%s (protocol %d): no row", v.MinecraftVersion, v.Version)
		}
		for _, f := range []struct {
			state, dir, name string
			got              int32
		}{
			{"play", "toClient", "start_configuration", p.StartConfiguration},
			{"play", "toClient", "kick_disconnect", p.PlayDisconnect},
			{"play", "toClient", "system_chat", p.SystemChat},
			{"play", "toClient", "custom_payload", p.PlayPluginCB},
			{"play", "toClient", "keep_alive", p.PlayKeepAliveCB},
			{"play", "toServer", "configuration_acknowledged", p.AcknowledgeConfiguration},
			{"play", "toServer", "custom_payload", p.PlayPluginSB},
			{"play", "toServer", "keep_alive", p.PlayKeepAliveSB},
			{"configuration", "toClient", "custom_payload", p.ConfigPluginCB},
			{"configuration", "toClient", "disconnect", p.ConfigDisconnect},
			{"configuration", "toClient", "finish_configuration", p.FinishConfigurationCB},
			{"configuration", "toClient", "keep_alive", p.ConfigKeepAliveCB},
			{"configuration", "toServer", "custom_payload", p.ConfigPluginSB},
			{"configuration", "toServer", "finish_configuration", p.FinishConfigurationSB},
			{"configuration", "toServer", "keep_alive", p.ConfigKeepAliveSB},
		} {
			want, ok := ids[f.state+"/"+f.dir+"/"+f.name]
			if !ok {
				t.Errorf("%s: minecraft-data has no %s %s %s", v.MinecraftVersion, f.state, f.dir, f.name)
				continue
			}
			if f.got != want {
				t.Errorf("%s (protocol %d): %s %s %s is 0x%02x in the table, 0x%02x in minecraft-data", v.MinecraftVersion, v.Version, f.state, f.dir, f.name, f.got, want)
			}
		}
		checked++
	}
	if checked < 10 {
		t.Fatalf("checked %d releases, want at least 10 (1.20.2 to 1.21.x)", checked)
	}
}

// packetIDs reads a minecraft-data protocol.json's packet IDs as
// "state/direction/name".
func packetIDs(t *testing.T, path string) map[string]int32 {
	t.Helper()
	var doc map[string]json.RawMessage
	mustJSON(t, readFile(t, path), &doc)
	out := map[string]int32{}
	for _, state := range []string{"play", "configuration"} {
		var st map[string]struct {
			Types struct {
				Packet []json.RawMessage `json:"packet"`
			} `json:"types"`
		}
		mustJSON(t, doc[state], &st)
		for dir, d := range st {
			// "packet": ["container", [{"name": "name", "type": ["mapper", {"mappings": {...}}]}, ...]]
			var fields []struct {
				Type []json.RawMessage `json:"type"`
			}
			mustJSON(t, d.Types.Packet[1], &fields)
			var mapper struct {
				Mappings map[string]string `json:"mappings"`
			}
			mustJSON(t, fields[0].Type[1], &mapper)
			for hex, name := range mapper.Mappings {
				id, err := strconv.ParseInt(hex, 0, 32)
				if err != nil {
					t.Fatalf("%s: mapping %q: %v", path, hex, err)
				}
				out[state+"/"+dir+"/"+name] = int32(id)
			}
		}
	}
	return out
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("minecraft-data: %v", err)
	}
}

// TestConfigPacketsOf: versions before 1.20.2 have no row; each row starts
// where the table says, and later versions keep the last.
func TestConfigPacketsOf(t *testing.T) {
	for _, tc := range []struct {
		v     int32
		ok    bool
		start int32
	}{
		{763, false, 0}, {764, true, 0x65}, {765, true, 0x67}, {766, true, 0x69}, {767, true, 0x69},
		{768, true, 0x70}, {769, true, 0x70}, {770, true, 0x6f}, {772, true, 0x6f}, {773, true, 0x74}, {774, true, 0x74}, {775, true, 0x76}, {1 << 30, true, 0x76},
	} {
		p, ok := ConfigPacketsOf(tc.v)
		if ok != tc.ok || p.StartConfiguration != tc.start {
			t.Errorf("ConfigPacketsOf(%d) = start 0x%02x, %v; want 0x%02x, %v", tc.v, p.StartConfiguration, ok, tc.start, tc.ok)
		}
	}
}

// TestAppendTextComponent: the JSON form before 1.20.3, NBT after, with
// Java's modified UTF-8 for NUL and supplementary characters.
func TestAppendTextComponent(t *testing.T) {
	old, _ := ConfigPacketsOf(764)
	got := AppendTextComponent(nil, old, `a"b`, "red")
	want := AppendString(nil, []byte(`{"text":"a\"b","color":"red"}`))
	if !bytes.Equal(got, want) {
		t.Errorf("764: % x, want % x", got, want)
	}
	cur, _ := ConfigPacketsOf(765)
	got = AppendTextComponent(nil, cur, "a\x00😀", "")
	want = []byte{nbtCompound, nbtString, 0, 4, 't', 'e', 'x', 't', 0, 9, 'a', 0xc0, 0x80, 0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80, nbtEnd}
	if !bytes.Equal(got, want) {
		t.Errorf("765: % x, want % x", got, want)
	}
	chat := AppendSystemChat(nil, cur, got)
	if id, data, err := ParsePacketID(chat); err != nil || id != cur.SystemChat || !bytes.Equal(data, append(append([]byte(nil), got...), 0)) {
		t.Errorf("system chat: id 0x%02x data % x err %v", id, data, err)
	}
	long := AppendTextComponent(nil, cur, string(bytes.Repeat([]byte("é"), 40000)), "")
	if n := int(long[8])<<8 | int(long[9]); n != 65534 {
		t.Errorf("a long text is cut to %d bytes, want 65534 (whole characters under 65535)", n)
	}
}
