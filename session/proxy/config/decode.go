package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// decoder walks a yaml.Node tree into a Config by reflection, instead of
// yaml.v3's own decoding, for what that cannot do: report every unknown key
// and bad value (yaml.v3 stops reporting values once a key is unknown, and
// its messages name Go types), take 0 for a duration, expand ${VAR}
// placeholders, and remember where each key was so that the semantic checks
// can point at the line.
type decoder struct {
	problems []Problem
	bad      map[string]bool   // paths with a problem, so checks skip them
	pos      map[string][2]int // path -> line, column of its value
	lookup   func(string) (string, bool)
	active   map[*yaml.Node]bool // anchors being expanded, to refuse cycles
	inAlias  int                 // >0 while expanding an alias
	visits   int
	budget   int
	stopped  bool
}

func newDecoder(lookup func(string) (string, bool), size int) *decoder {
	return &decoder{
		bad: map[string]bool{}, pos: map[string][2]int{}, lookup: lookup,
		active: map[*yaml.Node]bool{},
		// Without aliases a document has fewer values than bytes; aliases
		// can repeat a part many times over (a "billion laughs"), and
		// this bounds the work and memory that takes.
		budget: 1<<16 + 2*size,
	}
}

// fail records a problem at node n about path.
func (d *decoder) fail(n *yaml.Node, path, format string, args ...any) {
	d.problems = append(d.problems, Problem{Line: n.Line, Col: n.Column, Path: path, Msg: fmt.Sprintf(format, args...)})
	d.bad[path] = true
}

// isSet reports whether the file gave path a value.
func (d *decoder) isSet(path string) bool {
	_, ok := d.pos[path]
	return ok
}

// where returns the position of path, or of its nearest ancestor the file
// sets; 0, 0 when the file sets none of them.
func (d *decoder) where(path string) (line, col int) {
	for path != "" {
		if p, ok := d.pos[path]; ok {
			return p[0], p[1]
		}
		path = parentPath(path)
	}
	return 0, 0
}

// suppressed reports whether a check's problem about path would repeat one
// the decoding already reported for it or an ancestor (a value that did not
// decode was left at its default, which a check may then refuse).
func (d *decoder) suppressed(path string) bool {
	for {
		if d.bad[path] {
			return true
		}
		if path == "" {
			return false
		}
		path = parentPath(path)
	}
}

// parentPath drops the last element of a key path: groups.main.backends[0]
// gives groups.main.backends, listeners gives "".
func parentPath(path string) string {
	if i := strings.LastIndexAny(path, ".["); i >= 0 {
		return path[:i]
	}
	return ""
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

var durationType = reflect.TypeFor[time.Duration]()

// elemDefaults are what a new list element starts from, so that a key it
// leaves out has its default and one it sets, even to 0, keeps that value.
var elemDefaults = map[reflect.Type]reflect.Value{
	reflect.TypeFor[ListenerConfig](): reflect.ValueOf(ListenerConfig{Mode: ModeMinecraft, ProxyProtocol: ProxyProtocolConfig{Accept: ProxyProtocolOff}}),
	reflect.TypeFor[GroupConfig]():    reflect.ValueOf(GroupConfig{SendProxyProtocol: ProxyProtocolOff, Strategy: StrategyWeightedRandom}),
	reflect.TypeFor[BackendConfig]():  reflect.ValueOf(BackendConfig{Weight: 1}),
}

func newElem(t reflect.Type) reflect.Value {
	v := reflect.New(t).Elem()
	if def, ok := elemDefaults[t]; ok {
		v.Set(def)
	}
	return v
}

// value decodes n into v, whose current content is the default.
func (d *decoder) value(n *yaml.Node, v reflect.Value, path string) {
	if d.stopped {
		return
	}
	if d.visits++; d.visits > d.budget {
		d.stopped = true
		d.fail(n, path, "the file expands to more than %d values (aliases repeating large parts of it?)", d.budget)
		return
	}
	if d.inAlias == 0 && path != "" {
		d.pos[path] = [2]int{n.Line, n.Column}
	}
	if n.Kind == yaml.AliasNode {
		// Positions inside the anchored text would point away from the
		// alias; checks point at the alias instead.
		if d.active[n.Alias] {
			d.fail(n, path, "alias *%s refers to itself", n.Value)
			return
		}
		d.active[n.Alias] = true
		d.inAlias++
		d.value(n.Alias, v, path)
		d.inAlias--
		delete(d.active, n.Alias)
		return
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return // an empty value: the default stays
	}
	if v.Type() == durationType {
		d.duration(n, v, path)
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		d.mapping(n, v, path)
	case reflect.Map:
		d.mapping(n, v, path)
	case reflect.Slice:
		d.sequence(n, v, path)
	case reflect.String:
		if text, ok := d.scalar(n, path, "a single value"); ok {
			v.SetString(text)
		}
	case reflect.Bool:
		text, ok := d.scalar(n, path, "true or false")
		if !ok {
			return
		}
		switch strings.ToLower(text) {
		case "true":
			v.SetBool(true)
		case "false":
			v.SetBool(false)
		default:
			d.fail(n, path, "%q: want true or false", text)
		}
	case reflect.Int, reflect.Int64:
		text, ok := d.scalar(n, path, "a whole number")
		if !ok {
			return
		}
		i, err := parseWhole(text)
		if err != nil || v.OverflowInt(i) {
			d.fail(n, path, "%q: want a whole number", text)
			return
		}
		v.SetInt(i)
	case reflect.Float64:
		text, ok := d.scalar(n, path, "a number")
		if !ok {
			return
		}
		f, err := parseNumber(text)
		if err != nil {
			d.fail(n, path, "%q: want a number, as 10 or 0.5", text)
			return
		}
		v.SetFloat(f)
	default:
		// Only reachable by adding a field of a new kind to Config.
		panic(fmt.Sprintf("proxy config: no decoding for %s (%s)", v.Type(), path))
	}
}

// describe names what a node is, for "found ..." in messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a map"
	case yaml.SequenceNode:
		return "a list"
	}
	return strconv.Quote(n.Value)
}

// scalar returns the text of a single value with its placeholders expanded.
func (d *decoder) scalar(n *yaml.Node, path, want string) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		d.fail(n, path, "want %s, found %s", want, describe(n))
		return "", false
	}
	text, errs := expandVars(n.Value, d.lookup)
	for _, e := range errs {
		d.fail(n, path, "%s", e)
	}
	return text, len(errs) == 0
}

// duration decodes a duration: a number with a unit (500ms, 5s, 10m, 1h30m),
// or a bare 0.
func (d *decoder) duration(n *yaml.Node, v reflect.Value, path string) {
	text, ok := d.scalar(n, path, "a duration")
	if !ok {
		return
	}
	if text == "0" {
		v.SetInt(0)
		return
	}
	if _, err := strconv.ParseFloat(text, 64); err == nil {
		d.fail(n, path, "%s has no unit: write %ss, or use ms, m or h (only 0 needs none)", text, text)
		return
	}
	dur, err := time.ParseDuration(text)
	if err != nil {
		d.fail(n, path, "%q: want a duration, a number and a unit as in 500ms, 5s or 10m", text)
		return
	}
	v.SetInt(int64(dur))
}

// parseWhole parses a decimal integer, which may group digits with _
// (1_048_576). Unlike Go and YAML 1.1 a leading 0 is not octal.
func parseWhole(text string) (int64, error) {
	digits := strings.TrimLeft(text, "+-")
	if len(text)-len(digits) > 1 || digits == "" || digits[0] == '_' || digits[len(digits)-1] == '_' || strings.Contains(digits, "__") {
		return 0, strconv.ErrSyntax
	}
	return strconv.ParseInt(strings.ReplaceAll(text, "_", ""), 10, 64)
}

// parseNumber parses a decimal number, which may group digits with _ as
// parseWhole does; infinities, NaN and hexadecimal are refused.
func parseNumber(text string) (float64, error) {
	whole, frac, _ := strings.Cut(text, ".")
	if _, err := parseWhole(whole); err != nil && whole != "" && whole != "-" && whole != "+" {
		return 0, err
	}
	if strings.Trim(frac, "0123456789") != "" || whole == "" && frac == "" {
		return 0, strconv.ErrSyntax
	}
	return strconv.ParseFloat(strings.ReplaceAll(text, "_", ""), 64)
}

// mapping decodes a YAML map into a struct (its keys are the fields' yaml
// names) or into a Go map keyed by name.
func (d *decoder) mapping(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "want a map (key: value lines), found %s", describe(n))
		return
	}
	var fields map[string]int
	var known []string
	if v.Kind() == reflect.Struct {
		fields, known = structKeys(v.Type())
	} else if v.IsNil() {
		v.Set(reflect.MakeMap(v.Type()))
	}
	// Merged maps (<<: *anchor) go first, so the keys written here win;
	// of several merged, the first listed wins, so they go in reverse.
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			d.merge(n.Content[i+1], v, path)
		}
	}
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			continue
		}
		if k.Kind == yaml.AliasNode {
			k = k.Alias
		}
		if k.Kind != yaml.ScalarNode {
			d.fail(k, path, "a key must be a name, found %s", describe(k))
			continue
		}
		key := k.Value
		kp := joinPath(path, key)
		if first, dup := seen[key]; dup {
			d.fail(k, kp, "set twice (first on line %d)", first.Line)
			continue
		}
		seen[key] = k
		if fields == nil {
			elem := newElem(v.Type().Elem())
			d.value(val, elem, kp)
			v.SetMapIndex(reflect.ValueOf(key).Convert(v.Type().Key()), elem)
			continue
		}
		idx, ok := fields[key]
		if !ok {
			d.fail(k, kp, "%s", unknownKeyMsg(key, known))
			continue
		}
		d.value(val, v.Field(idx), kp)
	}
}

// merge decodes the value of a << key, a map (or an alias of one) or a list
// of them, into v.
func (d *decoder) merge(n *yaml.Node, v reflect.Value, path string) {
	// The map being merged into keeps its own position for the checks.
	pos, had := d.pos[path]
	defer func() {
		if had {
			d.pos[path] = pos
		}
	}()
	if n.Kind != yaml.SequenceNode {
		d.value(n, v, path)
		return
	}
	for i := len(n.Content) - 1; i >= 0; i-- {
		d.value(n.Content[i], v, path)
	}
}

// sequence decodes a YAML list into a slice.
func (d *decoder) sequence(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.SequenceNode {
		d.fail(n, path, "want a list (an item a line, each starting with \"- \"), found %s", describe(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), 0, len(n.Content))
	for i, item := range n.Content {
		elem := newElem(v.Type().Elem())
		d.value(item, elem, fmt.Sprintf("%s[%d]", path, i))
		s = reflect.Append(s, elem)
	}
	v.Set(s)
}

// structKeys returns the yaml keys of a struct's fields, by field index
// and in field order.
func structKeys(t reflect.Type) (map[string]int, []string) {
	fields := map[string]int{}
	var known []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		fields[name] = i
		known = append(known, name)
	}
	return fields, known
}

// expandVars replaces ${NAME} with the variable's value and ${NAME:-word}
// with it too, or with word when it is unset or empty; $${ is a literal ${.
// It returns the problems with the placeholders, if any.
func expandVars(s string, lookup func(string) (string, bool)) (string, []string) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	var errs []string
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], "$${") {
			b.WriteString("${")
			i += 3
			continue
		}
		if !strings.HasPrefix(s[i:], "${") {
			b.WriteByte(s[i])
			i++
			continue
		}
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			errs = append(errs, fmt.Sprintf("%q: ${ without a closing } (write $${ for a literal ${)", s[i:]))
			break
		}
		body := s[i+2 : i+2+end]
		i += 2 + end + 1
		name, def, hasDef := strings.Cut(body, ":-")
		if !validVarName(name) {
			errs = append(errs, fmt.Sprintf("${%s}: want ${NAME} or ${NAME:-default}, NAME made of letters, digits and _", body))
			continue
		}
		val, set := lookup(name)
		switch {
		case set && (val != "" || !hasDef):
			b.WriteString(val)
		case hasDef:
			b.WriteString(def)
		default:
			errs = append(errs, fmt.Sprintf("environment variable %s is not set (give a default as ${%s:-value})", name, name))
		}
	}
	return b.String(), errs
}

func validVarName(name string) bool {
	if name == "" || name[0] >= '0' && name[0] <= '9' {
		return false
	}
	for _, c := range []byte(name) {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
