package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestConfigViewRedactsSecrets: a Secret or SecretURL field is shown
// redacted wherever it is (top level, in a list, in a map) and listed by
// path when that hid something; everything else keeps its YAML key, order
// and value.
func TestConfigViewRedactsSecrets(t *testing.T) {
	type inner struct {
		Name     string `yaml:"name"`
		Password Secret `yaml:"password"`
	}
	type outer struct {
		Token   Secret           `yaml:"token"`
		Unset   Secret           `yaml:"unset_secret"`
		URL     SecretURL        `yaml:"url"`
		Plain   SecretURL        `yaml:"plain_url"`
		Wait    time.Duration    `yaml:"wait"`
		List    []inner          `yaml:"list"`
		Map     map[string]inner `yaml:"map"`
		Ignored string
		hidden  string
	}
	v, err := configView(reflect.ValueOf(outer{
		Token: "t0ps3cret", URL: "redis://u:pa55-url@127.0.0.1:6379/0", Plain: "redis://127.0.0.1:6379/1",
		Wait:   1500 * time.Millisecond,
		List:   []inner{{"a", "pa55-a"}, {"b", ""}},
		Map:    map[string]inner{"z": {"zed", "pa55-z"}, "m": {"em", "pa55-m"}},
		hidden: "h",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"token":"REDACTED","unset_secret":"","url":"redis://u:REDACTED@127.0.0.1:6379/0","plain_url":"redis://127.0.0.1:6379/1",` +
		`"wait":"1.5s","list":[{"name":"a","password":"REDACTED"},{"name":"b","password":""}],` +
		`"map":{"m":{"name":"em","password":"REDACTED"},"z":{"name":"zed","password":"REDACTED"}}}`
	if string(v.Config) != want {
		t.Fatalf("config\n%s\nwant\n%s", v.Config, want)
	}
	if !slices.Equal(v.Redacted, []string{"list[0].password", "map.m.password", "map.z.password", "token", "url"}) {
		t.Fatalf("redacted %q", v.Redacted)
	}
	for _, s := range []string{"t0ps3cret", "pa55"} {
		if strings.Contains(string(v.Config), s) {
			t.Fatalf("%q is in the output", s)
		}
	}
}

// secretWords are what a configuration key that holds a secret is likely
// to be named.
var secretWords = []string{"secret", "password", "passwd", "token", "credential", "private_key", "api_key", "auth", "url", "uri", "dsn", "redis"}

// TestSecretLookingKeysAreMarked: a configuration key named like a secret
// must have a secret type (Secret or SecretURL), so that wherever it is
// written it is redacted. This is a guard for new keys; the redaction
// itself goes by type.
func TestSecretLookingKeysAreMarked(t *testing.T) {
	eachConfigKey(func(path, key string, f reflect.StructField) {
		for _, w := range secretWords {
			if strings.Contains(strings.ToLower(key), w) && !f.Type.Implements(redactableType) {
				t.Errorf("%s looks like a secret (%q) and is a %s, not a Secret or SecretURL", joinPath(path, key), w, f.Type)
			}
		}
	})
}

// TestViewNamesEveryKey: the View of a configuration has every key of
// every part, by its YAML name, as TestREADMEDocumentsEveryKey walks them.
func TestViewNamesEveryKey(t *testing.T) {
	cfg, _, err := Parse("proxy.yaml", []byte(`
listeners: [{listen: "127.0.0.1:0", proxy_protocol: {accept: v2, trusted: [10.0.0.0/8]}}]
default_group: main
routes: [{hosts: [mods.example.com], group: mods}]
groups:
  main: {backends: [{addr: "127.0.0.1:1"}]}
  mods: {backends: [{addr: "127.0.0.1:2"}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	v, err := cfg.View()
	if err != nil {
		t.Fatal(err)
	}
	text := string(v.Config)
	eachConfigKey(func(path, key string, _ reflect.StructField) {
		if !strings.Contains(text, `"`+key+`":`) {
			t.Errorf("the view has no %s", joinPath(path, key))
		}
	})
}
