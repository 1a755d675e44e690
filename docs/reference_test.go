package docs_test

import (
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/session/proxy/config"
)

// referencePath is the proxy's configuration reference.
const referencePath = "proxy-config.md"

// keyRowRe is how the reference documents a key: a row of a table under
// the "## Keys" heading whose first cell is the key's whole path as one
// code span, as
//
//	| `limits.buffer_budget` | ... |
//
// A list's elements are written `[]` (listeners[].listen) and a map's
// values NAME (groups.NAME.backends[].addr).
var keyRowRe = regexp.MustCompile("^\\|\\s*`([a-z0-9_.\\[\\]A-Z]+)`\\s*\\|")

// configKeys returns the path of every key of the proxy's configuration,
// walking the yaml tags of config.Config and of every struct it holds,
// through lists and maps. A key whose value is a struct is listed too.
func configKeys() []string {
	var keys []string
	var walk func(ty reflect.Type, path string, inPath []reflect.Type)
	walk = func(ty reflect.Type, path string, inPath []reflect.Type) {
		for {
			switch ty.Kind() {
			case reflect.Pointer:
				ty = ty.Elem()
				continue
			case reflect.Slice, reflect.Array:
				ty, path = ty.Elem(), path+"[]"
				continue
			case reflect.Map:
				ty, path = ty.Elem(), path+".NAME"
				continue
			}
			break
		}
		if ty.Kind() != reflect.Struct || ty == reflect.TypeFor[time.Duration]() || slices.Contains(inPath, ty) {
			return
		}
		for i := range ty.NumField() {
			name, _, _ := strings.Cut(ty.Field(i).Tag.Get("yaml"), ",")
			if name == "" || name == "-" {
				continue
			}
			key := name
			if path != "" {
				key = path + "." + name
			}
			keys = append(keys, key)
			walk(ty.Field(i).Type, key, append(inPath, ty))
		}
	}
	walk(reflect.TypeFor[config.Config](), "", nil)
	return keys
}

// documentedKeys returns the keys the reference's "## Keys" section
// names, each with its line. Every row of its tables must start with a
// key, and no key may have two rows.
func documentedKeys(t *testing.T) map[string]int {
	t.Helper()
	documented := map[string]int{}
	for _, row := range sectionRows(t, referencePath, "Keys") {
		m := keyRowRe.FindStringSubmatch(row.text)
		if m == nil {
			t.Errorf("%s:%d: a row of the key tables that does not start with a key as a code span: %s", referencePath, row.line, row.text)
			continue
		}
		if first, ok := documented[m[1]]; ok {
			t.Errorf("%s:%d: %s is documented again (first on line %d)", referencePath, row.line, m[1], first)
		}
		documented[m[1]] = row.line
	}
	return documented
}

// TestReferenceDocumentsEveryKey: every key of the proxy's configuration
// has a row of its own in the reference, and the reference has no row for
// a key the configuration does not have.
func TestReferenceDocumentsEveryKey(t *testing.T) {
	keys := configKeys()
	if len(keys) < 50 {
		t.Fatalf("walked %d keys of config.Config, want the whole configuration (over 50): %v", len(keys), keys)
	}
	documented := documentedKeys(t)
	for _, k := range keys {
		if _, ok := documented[k]; !ok {
			t.Errorf("%s: key %s is in config.Config but not documented (want a row starting | `%s` |)", referencePath, k, k)
		}
	}
	for k, line := range documented {
		if !slices.Contains(keys, k) {
			t.Errorf("%s:%d: documents %s, which config.Config does not have", referencePath, line, k)
		}
	}
}

// TestConfigKeysWalk: the walk names keys as the reference writes them,
// through lists, maps and nested structs.
func TestConfigKeysWalk(t *testing.T) {
	keys := configKeys()
	for _, want := range []string{
		"listeners", "listeners[].listen", "listeners[].proxy_protocol.trusted",
		"groups.NAME.backends[].addr", "limits.buffer_budget", "status.offline.motd", "cluster.redis",
	} {
		if !slices.Contains(keys, want) {
			t.Errorf("configKeys() lacks %s; got %v", want, keys)
		}
	}
}
