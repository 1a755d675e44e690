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

// View is a configuration as the admin API shows it.
type View struct {
	// Config has the YAML file's keys and structure; durations are
	// written as Go durations ("5s", "10m0s") and secrets (Secret and
	// SecretURL fields) in their redacted form.
	Config json.RawMessage `json:"config"`
	// Redacted lists the paths of the secret fields whose value was
	// redacted (as cluster.redis), in order.
	Redacted []string `json:"redacted"`
}

// View returns c as the admin API shows it, secrets redacted.
func (c *Config) View() (View, error) {
	return configView(reflect.ValueOf(*c))
}

// configView encodes v (a struct) by its yaml keys, secrets redacted.
func configView(v reflect.Value) (View, error) {
	redacted := []string{}
	data, err := json.Marshal(jsonOf(v, "", func(path string, _ redactable) {
		redacted = append(redacted, path)
	}))
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

var redactableType = reflect.TypeFor[redactable]()

// jsonOf turns v, found at path, into what encoding/json writes as the
// admin API shows it; each secret whose shown form differs from its value
// goes to redacted with its path.
func jsonOf(v reflect.Value, path string, redacted func(path string, s redactable)) any {
	if v.Type() == durationType {
		return time.Duration(v.Int()).String()
	}
	if v.Type().Implements(redactableType) {
		s := v.Interface().(redactable)
		shown := s.String()
		if shown != s.Reveal() {
			redacted(path, s)
		}
		return shown
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
			obj = append(obj, jsonField{name, jsonOf(v.Field(i), joinPath(path, name), redacted)})
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
// (after defaults), which logs and metrics show to tell configurations
// apart. %#v writes secrets redacted, so their values are added by path:
// a configuration that changes only a password gets another hash.
func (c *Config) Hash() string {
	h := sha256.New()
	fmt.Fprintf(h, "%#v", *c)
	jsonOf(reflect.ValueOf(*c), "", func(path string, s redactable) {
		fmt.Fprintf(h, "\x00%s=%s", path, s.Reveal())
	})
	return hex.EncodeToString(h.Sum(nil)[:6])
}
