package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
)

// A configuration field tagged secret:"true" (a password, a forwarding
// secret, a URL with credentials) is left out wherever the configuration
// is shown: the admin API's /api/v1/config lists only its path, and only
// when it is set. TestSecretLookingKeysAreMarked fails for a key whose
// name suggests a secret and that lacks the tag.

// secretTag is the struct tag that marks a configuration field as secret.
const secretTag = "secret"

// View is a configuration as the admin API shows it.
type View struct {
	// Config has the YAML file's keys and structure; durations are
	// written as Go durations ("5s", "10m0s") and secret fields are left
	// out.
	Config json.RawMessage `json:"config"`
	// Redacted lists the paths of the secret fields that are set (as
	// groups.main.password), whose values are left out.
	Redacted []string `json:"redacted"`
}

// View returns c as the admin API shows it, secrets left out.
func (c *Config) View() (View, error) {
	return configView(reflect.ValueOf(*c))
}

// configView encodes v (a struct) by its yaml keys, leaving out secrets.
func configView(v reflect.Value) (View, error) {
	redacted := []string{}
	data, err := json.Marshal(jsonOf(v, "", &redacted))
	if err != nil {
		return View{}, fmt.Errorf("config: encoding the configuration: %w", err)
	}
	slices.Sort(redacted) // map keys come in no order
	return View{Config: data, Redacted: redacted}, nil
}

// jsonObject is a JSON object that keeps its keys in order (the order of
// the struct fields, as in the YAML reference).
type jsonObject []jsonField

type jsonField struct {
	key   string
	value any
}

// MarshalJSON writes the fields in order.
func (o jsonObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(f.key)
		if err != nil {
			return nil, err
		}
		val, err := json.Marshal(f.value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.key, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// jsonOf turns v, found at path, into what encoding/json writes as the
// admin API shows it; the paths of set secret fields go to redacted.
func jsonOf(v reflect.Value, path string, redacted *[]string) any {
	if v.Type() == durationType {
		return time.Duration(v.Int()).String()
	}
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		obj := jsonObject{}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "" || name == "-" || !f.IsExported() {
				continue
			}
			p := joinPath(path, name)
			if f.Tag.Get(secretTag) == "true" {
				if !v.Field(i).IsZero() {
					*redacted = append(*redacted, p)
				}
				continue
			}
			obj = append(obj, jsonField{name, jsonOf(v.Field(i), p, redacted)})
		}
		return obj
	case reflect.Map:
		m := make(map[string]any, v.Len())
		iter := v.MapRange()
		for iter.Next() {
			k := fmt.Sprint(iter.Key().Interface())
			m[k] = jsonOf(iter.Value(), joinPath(path, k), redacted)
		}
		return m
	case reflect.Slice:
		s := make([]any, v.Len())
		for i := range s {
			s[i] = jsonOf(v.Index(i), fmt.Sprintf("%s[%d]", path, i), redacted)
		}
		return s
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return jsonOf(v.Elem(), path, redacted)
	}
	return v.Interface()
}

// Hash returns a short digest of the configuration as the proxy uses it
// (after defaults), which logs and metrics show to tell configurations apart.
func (c *Config) Hash() string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%#v", *c))
	return hex.EncodeToString(sum[:6])
}
