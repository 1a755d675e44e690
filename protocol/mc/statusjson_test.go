package mc

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
)

const vanillaStatus = `{"version":{"name":"1.20.2","protocol":764},"players":{"max":20,"online":3,"sample":[{"name":"Steve","id":"8667ba71-b85a-4004-af54-457a9734eed7"}]},"description":{"text":"A Minecraft Server"},"favicon":"data:image/png;base64,iVBORw0KGgo=","enforcesSecureChat":true}`

func TestParseStatusJSON(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     StatusInfo
	}{
		{"vanilla", vanillaStatus, StatusInfo{VersionName: "1.20.2", Protocol: 764, Online: 3, Max: 20, Description: json.RawMessage(`{"text":"A Minecraft Server"}`)}},
		{"string description", `{"description":"§aHi","version":{"name":"x","protocol":-1}}`, StatusInfo{VersionName: "x", Protocol: -1, Description: json.RawMessage(`"§aHi"`)}},
		{"empty object", `{}`, StatusInfo{}},
		{"null parts", `{"version":null,"players":null,"description":null}`, StatusInfo{}},
		{"whitespace", " \n{ \"players\" : { \"online\" : 7 } }\n", StatusInfo{Online: 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseStatusJSON([]byte(tc.in))
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ParseStatusJSON = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	for name, in := range map[string]string{
		"not JSON":                `{"version":`,
		"an array":                `[1]`,
		"a string":                `"motd"`,
		"null":                    `null`,
		"protocol not a number":   `{"version":{"protocol":"764"}}`,
		"protocol out of range":   `{"version":{"protocol":4294967296}}`,
		"name not a string":       `{"version":{"name":5}}`,
		"online not a number":     `{"players":{"online":"3"}}`,
		"version not an object":   `{"version":"1.20"}`,
		"trailing garbage":        `{} x`,
		"empty":                   ``,
		"fractional player count": `{"players":{"max":1.5}}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseStatusJSON([]byte(in))
			checkReason(t, err, ReasonBadStatusJSON)
		})
	}
}

func TestSplitStatusJSON(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		online   int64
		want     string // with protocol 5
	}{
		{"vanilla kept", vanillaStatus, -1,
			`{"description":{"text":"A Minecraft Server"},"enforcesSecureChat":true,"favicon":"data:image/png;base64,iVBORw0KGgo=","players":{"max":20,"online":3,"sample":[{"name":"Steve","id":"8667ba71-b85a-4004-af54-457a9734eed7"}]},"version":{"name":"1.20.2","protocol":5}}`},
		{"online replaced", vanillaStatus, 42,
			`{"description":{"text":"A Minecraft Server"},"enforcesSecureChat":true,"favicon":"data:image/png;base64,iVBORw0KGgo=","players":{"max":20,"online":42,"sample":[{"name":"Steve","id":"8667ba71-b85a-4004-af54-457a9734eed7"}]},"version":{"name":"1.20.2","protocol":5}}`},
		{"no version, no players", `{"description":"d"}`, 0, `{"description":"d","players":{"online":0},"version":{"protocol":5}}`},
		{"empty", `{}`, -1, `{"version":{"protocol":5}}`},
		{"null version", `{"version":null}`, -1, `{"version":{"protocol":5}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			head, tail, err := SplitStatusJSON([]byte(tc.in), tc.online)
			if err != nil {
				t.Fatal(err)
			}
			got := string(head) + "5" + string(tail)
			if got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
			if !json.Valid([]byte(got)) {
				t.Fatalf("not JSON: %s", got)
			}
			st, err := ParseStatusJSON([]byte(got))
			if err != nil || st.Protocol != 5 {
				t.Fatalf("re-parsed: %+v, %v", st, err)
			}
			if tc.online >= 0 && st.Online != tc.online {
				t.Fatalf("online %d, want %d", st.Online, tc.online)
			}
			if p := strconv.Itoa(int(st.Protocol)); p != "5" {
				t.Fatal(p)
			}
		})
	}
	for name, in := range map[string]string{
		"not JSON":              `{`,
		"an array":              `[]`,
		"null":                  `null`,
		"version not an object": `{"version":1}`,
		"players not an object": `{"players":[]}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := SplitStatusJSON([]byte(in), 1)
			checkReason(t, err, ReasonBadStatusJSON)
		})
	}
}

func TestSplitStatusJSONPlayersSample(t *testing.T) {
	in := `{"description":"hi","players":{"max":10,"online":1,"sample":[{"name":"a","id":"x"}]},"version":{"name":"1.20.2","protocol":764}}`
	head, tail, err := SplitStatusJSONPlayers([]byte(in), 7, []byte(`[{"id":"00000000-0000-3000-8000-000000000000","name":"Steve"}]`))
	if err != nil {
		t.Fatal(err)
	}
	got := string(head) + "764" + string(tail)
	want := `{"description":"hi","players":{"max":10,"online":7,"sample":[{"id":"00000000-0000-3000-8000-000000000000","name":"Steve"}]},"version":{"name":"1.20.2","protocol":764}}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if _, _, err := SplitStatusJSONPlayers([]byte(`{"players":3,"version":{}}`), -1, []byte(`[]`)); err == nil {
		t.Fatal("a players value that is not an object was accepted")
	}
}
