package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"gopkg.in/yaml.v3"
)

// testSecret is what the tests put into every secret; they fail if it is
// in anything the configuration writes.
const testSecret = "hunter2-s3cret"

// fillSecrets puts a recognisable secret into every Secret and SecretURL
// of v (a settable value), growing empty lists and maps by one element so
// that the secrets inside them get one too, and returns the paths it set.
func fillSecrets(v reflect.Value, path string) []string {
	switch {
	case v.Type() == reflect.TypeFor[Secret]():
		v.SetString(testSecret)
		return []string{path}
	case v.Type() == reflect.TypeFor[SecretURL]():
		v.SetString("redis://default:" + testSecret + "@127.0.0.1:1/0")
		return []string{path}
	}
	var set []string
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ","); name != "" && v.Field(i).CanSet() {
				set = append(set, fillSecrets(v.Field(i), joinPath(path, name))...)
			}
		}
	case reflect.Slice:
		if v.Len() == 0 {
			v.Set(reflect.Append(v, newElem(v.Type().Elem())))
		}
		for i := range v.Len() {
			set = append(set, fillSecrets(v.Index(i), fmt.Sprintf("%s[%d]", path, i))...)
		}
	case reflect.Map:
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		if v.Len() == 0 {
			v.SetMapIndex(reflect.ValueOf("k").Convert(v.Type().Key()), newElem(v.Type().Elem()))
		}
		iter := v.MapRange()
		for iter.Next() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(iter.Value())
			set = append(set, fillSecrets(e, joinPath(path, fmt.Sprint(iter.Key())))...)
			v.SetMapIndex(iter.Key(), e)
		}
	}
	return set
}

// TestSecretsNeverWritten feeds every secret field of the configuration a
// recognisable secret and writes the configuration every way the proxy
// does or could: the admin API's view, fmt's verbs, encoding/json and YAML,
// zerolog, and the hash. None may hold the secret; the view lists every
// field it redacted, and Reveal still gives the value.
func TestSecretsNeverWritten(t *testing.T) {
	cfg := defaultConfig()
	set := fillSecrets(reflect.ValueOf(&cfg).Elem(), "")
	if !strings.Contains(strings.Join(set, " "), "cluster.redis") {
		t.Fatalf("the walk set %q, not cluster.redis", set)
	}
	if cfg.Cluster.Redis.Reveal() != "redis://default:"+testSecret+"@127.0.0.1:1/0" {
		t.Fatalf("Reveal gives %q", cfg.Cluster.Redis.Reveal())
	}
	v, err := cfg.View()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(set) // the view lists them by path
	if strings.Join(v.Redacted, " ") != strings.Join(set, " ") {
		t.Errorf("the view redacted %q, want %q", v.Redacted, set)
	}
	if !strings.Contains(string(v.Config), `"redis":"redis://default:REDACTED@127.0.0.1:1/0"`) {
		t.Errorf("the view does not show cluster.redis redacted:\n%s", v.Config)
	}
	written := map[string]string{"View": string(v.Config)}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%10.30s"} {
		written["fmt "+verb] = fmt.Sprintf(verb, cfg) + fmt.Sprintf(verb, cfg.Cluster) + fmt.Sprintf(verb, cfg.Cluster.Redis)
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	written["encoding/json"] = string(js)
	ys, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	written["yaml"] = string(ys)
	var logs bytes.Buffer
	log := zerolog.New(&logs)
	log.Info().Interface("config", cfg).Any("cluster", cfg.Cluster).Stringer("redis", cfg.Cluster.Redis).
		Str("str", cfg.Cluster.Redis.String()).Msgf("%v", cfg.Cluster.Redis)
	written["zerolog"] = logs.String()
	written["Hash"] = cfg.Hash()
	written["String"] = cfg.Cluster.Redis.String() + cfg.Cluster.Redis.GoString()
	for what, text := range written {
		if strings.Contains(text, testSecret) {
			t.Errorf("%s writes the secret:\n%s", what, text)
		}
	}
	if !strings.Contains(logs.String(), "REDACTED") {
		t.Errorf("the log shows no REDACTED:\n%s", logs.String())
	}
}

// TestSecretsChangeTheHash: two configurations that differ only in a
// secret have different hashes, though %#v writes both alike.
func TestSecretsChangeTheHash(t *testing.T) {
	a, b := defaultConfig(), defaultConfig()
	a.Cluster.Redis = "redis://default:one@127.0.0.1:1/0"
	b.Cluster.Redis = "redis://default:two@127.0.0.1:1/0"
	if fmt.Sprintf("%#v", a) != fmt.Sprintf("%#v", b) {
		t.Fatalf("fmt %s tells the passwords apart", "%#v")
	}
	if a.Hash() == b.Hash() {
		t.Errorf("both hash to %s", a.Hash())
	}
}

// TestSecretProblemsDoNotQuoteIt: a configuration whose secret URL is
// wrong (or whose ${VAR} gives a secret) is refused with problems that
// do not hold the secret, and one that is right decodes it as written.
func TestSecretProblemsDoNotQuoteIt(t *testing.T) {
	t.Setenv("TIDEGATE_TEST_REDIS_PW", testSecret)
	base := "listeners: [{listen: 127.0.0.1:0}]\ndefault_group: main\ngroups: {main: {backends: [{addr: 127.0.0.1:1}]}}\n"
	for _, redis := range []string{
		"redis://default:${TIDEGATE_TEST_REDIS_PW}@127.0.0.1:bad/0", // url.Parse fails
		"redis://default:${TIDEGATE_TEST_REDIS_PW}@127.0.0.1:1/x",   // not a database number
		"http://default:${TIDEGATE_TEST_REDIS_PW}@127.0.0.1:1/0",    // not a Redis scheme
		"redis://default:${TIDEGATE_TEST_REDIS_PW}@127.0.0.1:1/0?db=x&dial_timeout=y",
		"default:${TIDEGATE_TEST_REDIS_PW}@127.0.0.1:1", // no scheme
	} {
		_, _, err := Parse("proxy.yaml", []byte(base+"cluster: {redis: \""+redis+"\", id: \"bad id\"}\n"))
		if err == nil {
			t.Errorf("%s: accepted", redis)
			continue
		}
		if !strings.Contains(err.Error(), "cluster.redis") || strings.Contains(err.Error(), testSecret) {
			t.Errorf("%s: the problems do not name cluster.redis or hold the secret:\n%v", redis, err)
		}
	}
	cfg, _, err := Parse("proxy.yaml", []byte(base+"cluster: {redis: \"redis://default:${TIDEGATE_TEST_REDIS_PW}@127.0.0.1:1/0\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Cluster.Redis.Reveal(); got != "redis://default:"+testSecret+"@127.0.0.1:1/0" {
		t.Errorf("decoded %q", got)
	}
}

// TestRedactURL: the credentials of a URL are replaced, the rest kept;
// what does not parse is redacted whole.
func TestRedactURL(t *testing.T) {
	for raw, want := range map[string]string{
		"":                                    "",
		"redis://127.0.0.1:6379/0":            "redis://127.0.0.1:6379/0",
		"redis://default:pw@127.0.0.1:6379/0": "redis://default:REDACTED@127.0.0.1:6379/0",
		"redis://:pw@127.0.0.1:6379/0?db=1":   "redis://:REDACTED@127.0.0.1:6379/0?db=1",
		"rediss://token@redis.example:6380":   "rediss://REDACTED@redis.example:6380",
		"unix://u:pw@/run/redis.sock?db=2":    "unix://u:REDACTED@/run/redis.sock?db=2",
		"redis://u:p/w@127.0.0.1:6379":        "REDACTED",
		"redis://u:p#w@127.0.0.1:6379":        "REDACTED",
		"redis://u:p@w@127.0.0.1:6379":        "redis://u:REDACTED@127.0.0.1:6379",
		"u:pw@127.0.0.1:6379":                 "REDACTED",
		"//u:pw@127.0.0.1:6379":               "REDACTED",
	} {
		if got := SecretURL(raw).String(); got != want {
			t.Errorf("%q shows as %q, want %q", raw, got, want)
		}
	}
	if got := fmt.Sprintf("%v %s %q %#v", Secret(""), Secret("x"), Secret("x"), Secret("x")); got != ` REDACTED "REDACTED" "REDACTED"` {
		t.Errorf("Secret shows as %s", got)
	}
}
