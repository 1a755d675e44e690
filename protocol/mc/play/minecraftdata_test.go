package play

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// minecraftData is node-minecraft-protocol's copy of minecraft-data, when
// internal/testkit/nodemc's npm install has run.
const minecraftData = "../../../internal/testkit/nodemc/js/node_modules/minecraft-data/minecraft-data/data"

// dataVersion is the minecraft-data release each row is checked against.
var dataVersion = map[int32]string{5: "1.7", 47: "1.8", 340: "1.12.2", 754: "1.16.5", 758: "1.18.2", 762: "1.19.4", 763: "1.20.1"}

// fieldsOf is the field order ParseJoinGame and AppendRespawn follow for
// each layout, in minecraft-data's names.
var fieldsOf = map[Layout][2]string{
	Layout17: {"entityId gameMode dimension difficulty maxPlayers levelType", "dimension difficulty gamemode levelType"},
	Layout18: {"entityId gameMode dimension difficulty maxPlayers levelType reducedDebugInfo", "dimension difficulty gamemode levelType"},
	Layout1912: {"entityId gameMode dimension difficulty maxPlayers levelType reducedDebugInfo",
		"dimension difficulty gamemode levelType"},
	Layout1162: {"entityId isHardcore gameMode previousGameMode worldNames dimensionCodec dimension worldName hashedSeed maxPlayers viewDistance reducedDebugInfo enableRespawnScreen isDebug isFlat",
		"dimension worldName hashedSeed gamemode previousGamemode isDebug isFlat copyMetadata"},
	Layout118: {"entityId isHardcore gameMode previousGameMode worldNames dimensionCodec dimension worldName hashedSeed maxPlayers viewDistance simulationDistance reducedDebugInfo enableRespawnScreen isDebug isFlat",
		"dimension worldName hashedSeed gamemode previousGamemode isDebug isFlat copyMetadata"},
	Layout1193: {"entityId isHardcore gameMode previousGameMode worldNames dimensionCodec worldType worldName hashedSeed maxPlayers viewDistance simulationDistance reducedDebugInfo enableRespawnScreen isDebug isFlat death",
		"dimension worldName hashedSeed gamemode previousGamemode isDebug isFlat copyMetadata death"},
	Layout120: {"entityId isHardcore gameMode previousGameMode worldNames dimensionCodec worldType worldName hashedSeed maxPlayers viewDistance simulationDistance reducedDebugInfo enableRespawnScreen isDebug isFlat death portalCooldown",
		"dimension worldName hashedSeed gamemode previousGamemode isDebug isFlat copyMetadata death portalCooldown"},
}

// TestPacketsAgainstMinecraftData checks every row's packet IDs, and the
// field order of its Join Game and Respawn, against minecraft-data's
// protocol.json. It skips without the npm install, except under CI=true.
func TestPacketsAgainstMinecraftData(t *testing.T) {
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
	decode(t, paths, &dp)
	for _, p := range All() {
		name := dataVersion[p.Protocol]
		b, err := os.ReadFile(filepath.Join(minecraftData, dp.PC[name].Protocol, "protocol.json"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var doc struct {
			Play map[string]struct {
				Types map[string]json.RawMessage `json:"types"`
			} `json:"play"`
		}
		decode(t, b, &doc)
		ids := func(dir string) map[string]int32 {
			var fields []struct {
				Type []json.RawMessage `json:"type"`
			}
			decode(t, second(t, doc.Play[dir].Types["packet"]), &fields)
			var mapper struct {
				Mappings map[string]string `json:"mappings"`
			}
			decode(t, fields[0].Type[1], &mapper)
			out := map[string]int32{}
			for hex, n := range mapper.Mappings {
				id, _ := strconv.ParseInt(hex, 0, 32)
				out[n] = int32(id)
			}
			return out
		}
		cb, sb := ids("toClient"), ids("toServer")
		chat, title := "chat", "title"
		if p.Chat == ChatSystemBool {
			chat = "system_chat"
		}
		if p.Title == TitleClear {
			title = "clear_titles"
		}
		for _, f := range []struct {
			ids  map[string]int32
			name string
			got  int32
		}{
			{cb, "login", p.JoinGame}, {cb, "respawn", p.Respawn}, {cb, "keep_alive", p.KeepAliveCB},
			{cb, "kick_disconnect", p.Disconnect}, {cb, chat, p.ChatCB}, {cb, "custom_payload", p.PluginCB},
			{cb, title, p.TitleCB}, {cb, "playerlist_header", p.HeaderFooter},
			{sb, "keep_alive", p.KeepAliveSB}, {sb, "custom_payload", p.PluginSB},
		} {
			want, ok := f.ids[f.name]
			if !ok {
				want = -1
			}
			if f.got != want {
				t.Errorf("%s (protocol %d): %s is 0x%02x in the table, 0x%02x in minecraft-data", name, p.Protocol, f.name, f.got, want)
			}
		}
		for i, packet := range []string{"packet_login", "packet_respawn"} {
			var def []struct {
				Name string `json:"name"`
			}
			decode(t, second(t, doc.Play["toClient"].Types[packet]), &def)
			var names []string
			for _, f := range def {
				names = append(names, f.Name)
			}
			if got := strings.Join(names, " "); got != fieldsOf[p.Layout][i] {
				t.Errorf("%s: %s fields %q, the decoder follows %q", name, packet, got, fieldsOf[p.Layout][i])
			}
		}
	}
}

func decode(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("minecraft-data: %v", err)
	}
}

// second is the second element of a minecraft-data type, ["container", [...]].
func second(t *testing.T, b []byte) []byte {
	t.Helper()
	var pair []json.RawMessage
	decode(t, b, &pair)
	if len(pair) != 2 {
		t.Fatalf("minecraft-data: type %.40s is not a pair", b)
	}
	return pair[1]
}
