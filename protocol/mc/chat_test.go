package mc

import (
	"strings"
	"testing"
)

func TestLegacyText(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"plain string", `"A Minecraft Server"`, "A Minecraft Server"},
		{"string with codes kept", `"§cRed§r text"`, "§cRed§r text"},
		{"text object", `{"text":"hello"}`, "hello"},
		{"colour", `{"text":"hi","color":"red"}`, "§chi"},
		{"colour and flags", `{"text":"hi","color":"gold","bold":true,"italic":true}`, "§6§l§ohi"},
		{"flags without colour", `{"text":"hi","underlined":true}`, "§nhi"},
		{"quoted boolean", `{"text":"hi","bold":"true"}`, "§lhi"},
		{"extra inherits", `{"text":"a","color":"green","extra":["b",{"text":"c","color":"blue"},{"text":"d","bold":true}]}`, "§aab§9c§a§ld"},
		{"same style writes no codes", `{"text":"a","color":"red","extra":[{"text":"b","color":"red"}]}`, "§cab"},
		{"style ends: reset", `{"text":"","extra":[{"text":"a","bold":true},"b"]}`, "§la§rb"},
		{"flag turned off in a child", `{"text":"a","bold":true,"color":"red","extra":[{"text":"b","bold":false}]}`, "§c§la§cb"},
		{"array: first is the parent", `[{"text":"a","color":"aqua"},"b",{"text":"c","color":"reset"}]`, "§bab§rc"},
		{"array of strings", `["a","b"]`, "ab"},
		{"empty array", `[]`, ""},
		{"nested arrays", `[["a",["b"]],"c"]`, "abc"},
		{"hex colour to the nearest", `{"text":"x","color":"#FF5050"}`, "§cx"},
		{"bad hex colour keeps the parent's", `{"text":"p","color":"blue","extra":[{"text":"x","color":"#GG0000"}]}`, "§9px"},
		{"unknown colour name ignored", `{"text":"x","color":"mauve"}`, "x"},
		{"translate with fallback", `{"translate":"multiplayer.status.quitting","fallback":"Quitting"}`, "Quitting"},
		{"translate without fallback", `{"translate":"some.key"}`, "some.key"},
		{"number and boolean texts", `[1.5,true,null]`, "1.5true"},
		{"keybind shows nothing", `{"keybind":"key.jump"}`, ""},
		{"multi-line", `{"text":"one\ntwo"}`, "one\ntwo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LegacyText([]byte(tc.in))
			if err != nil || got != tc.want {
				t.Fatalf("LegacyText(%s) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
	for name, in := range map[string]string{
		"not JSON":            `{"text":`,
		"two values":          `"a" "b"`,
		"colour not a string": `{"text":"x","color":5}`,
		"bold not a boolean":  `{"text":"x","bold":1}`,
		"extra not an array":  `{"text":"x","extra":"y"}`,
		"too deep":            strings.Repeat("[", MaxChatDepth+2) + strings.Repeat("]", MaxChatDepth+2),
		"too deep in extra":   strings.Repeat(`{"extra":[`, MaxChatDepth+2) + strings.Repeat("]}", MaxChatDepth+2),
		"empty":               ``,
	} {
		t.Run(name, func(t *testing.T) {
			got, err := LegacyText([]byte(in))
			checkReason(t, err, ReasonBadChat)
			if got != "" {
				t.Fatalf("text %q with the error", got)
			}
		})
	}
}
