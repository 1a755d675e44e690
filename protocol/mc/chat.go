package mc

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// MaxChatDepth bounds how deeply chat components may nest (through extra
// and arrays) for LegacyText.
const MaxChatDepth = 32

// legacyColors maps chat colour names to their § code letters.
var legacyColors = map[string]byte{
	"black": '0', "dark_blue": '1', "dark_green": '2', "dark_aqua": '3', "dark_red": '4', "dark_purple": '5',
	"gold": '6', "gray": '7', "dark_gray": '8', "blue": '9', "green": 'a', "aqua": 'b', "red": 'c',
	"light_purple": 'd', "yellow": 'e', "white": 'f',
}

// legacyPalette is the RGB value of each legacy colour, by code letter, for
// mapping "#RRGGBB" colours to the nearest one.
var legacyPalette = [...]struct {
	code    byte
	r, g, b int
}{
	{'0', 0x00, 0x00, 0x00}, {'1', 0x00, 0x00, 0xAA}, {'2', 0x00, 0xAA, 0x00}, {'3', 0x00, 0xAA, 0xAA},
	{'4', 0xAA, 0x00, 0x00}, {'5', 0xAA, 0x00, 0xAA}, {'6', 0xFF, 0xAA, 0x00}, {'7', 0xAA, 0xAA, 0xAA},
	{'8', 0x55, 0x55, 0x55}, {'9', 0x55, 0x55, 0xFF}, {'a', 0x55, 0xFF, 0x55}, {'b', 0x55, 0xFF, 0xFF},
	{'c', 0xFF, 0x55, 0x55}, {'d', 0xFF, 0x55, 0xFF}, {'e', 0xFF, 0xFF, 0x55}, {'f', 0xFF, 0xFF, 0xFF},
}

// Formatting flags of a chat style, in the order their § codes are written.
var legacyFormats = [...]struct {
	key  string
	code byte
}{
	{"obfuscated", 'k'}, {"bold", 'l'}, {"strikethrough", 'm'}, {"underlined", 'n'}, {"italic", 'o'},
}

// chatStyle is a colour code letter (0 for none) and formatting flags (bit i
// for legacyFormats[i]).
type chatStyle struct {
	color byte
	flags uint8
}

// LegacyText renders a chat component (JSON: a string, an object with text
// or translate, extra and style keys, or an array whose first element is
// the parent of the others) as legacy text with § codes, as servers before
// 1.7 wrote their MOTD. Colours by name map to their codes, "#RRGGBB" to the
// nearest of the 16; translate components show their fallback, else their
// key; keybind, score and selector components show nothing. Violations
// (malformed JSON, nesting deeper than MaxChatDepth, a value of the wrong
// type) are reported with ReasonBadChat.
func LegacyText(component []byte) (string, error) {
	var v any
	d := json.NewDecoder(bytes.NewReader(component))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return "", chatError("chat component: " + err.Error())
	}
	if d.More() {
		return "", chatError("chat component: more than one JSON value")
	}
	var w legacyWriter
	if err := w.component(v, chatStyle{}, 0); err != nil {
		return "", err
	}
	return w.b.String(), nil
}

func chatError(text string) *ProtocolError {
	return &ProtocolError{Reason: ReasonBadChat, Field: text, kind: kindSentinel}
}

// legacyWriter accumulates legacy text, writing § codes only where the
// style changes.
type legacyWriter struct {
	b   strings.Builder
	cur chatStyle
}

func (w *legacyWriter) component(v any, inherited chatStyle, depth int) error {
	if depth > MaxChatDepth {
		return chatError("chat component nested deeper than " + strconv.Itoa(MaxChatDepth))
	}
	switch c := v.(type) {
	case string:
		w.text(c, inherited)
	case json.Number:
		w.text(c.String(), inherited)
	case bool:
		w.text(strconv.FormatBool(c), inherited)
	case nil:
	case []any:
		if len(c) == 0 {
			return nil
		}
		// The first element is the parent; the others are its extra.
		parent, ok := c[0].(map[string]any)
		if !ok {
			if err := w.component(c[0], inherited, depth+1); err != nil {
				return err
			}
			for _, child := range c[1:] {
				if err := w.component(child, inherited, depth+1); err != nil {
					return err
				}
			}
			return nil
		}
		return w.object(parent, c[1:], inherited, depth)
	case map[string]any:
		return w.object(c, nil, inherited, depth)
	}
	return nil
}

// object writes a component object, then its extra, then more (the rest of
// an array it heads), all in its style.
func (w *legacyWriter) object(c map[string]any, more []any, inherited chatStyle, depth int) error {
	st := inherited
	if col, ok := c["color"]; ok {
		name, ok := col.(string)
		if !ok {
			return chatError("chat component: color is not a string")
		}
		st.color = legacyColor(name, st.color)
	}
	for i, f := range legacyFormats {
		v, ok := c[f.key]
		if !ok {
			continue
		}
		on, isBool := v.(bool)
		if !isBool {
			if s, isString := v.(string); isString && (s == "true" || s == "false") {
				on = s == "true" // some servers quote it
			} else {
				return chatError("chat component: " + f.key + " is not a boolean")
			}
		}
		if on {
			st.flags |= 1 << i
		} else {
			st.flags &^= 1 << i
		}
	}
	switch {
	case c["text"] != nil:
		if err := w.component(c["text"], st, depth+1); err != nil {
			return err
		}
	case c["translate"] != nil:
		text := c["fallback"]
		if text == nil {
			text = c["translate"]
		}
		if err := w.component(text, st, depth+1); err != nil {
			return err
		}
	}
	if extra, ok := c["extra"]; ok {
		list, ok := extra.([]any)
		if !ok {
			return chatError("chat component: extra is not an array")
		}
		more = append(list[:len(list):len(list)], more...)
	}
	for _, child := range more {
		if err := w.component(child, st, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// legacyColor returns the code letter of a colour name or "#RRGGBB" value;
// "reset" gives none, an unknown name keeps cur.
func legacyColor(name string, cur byte) byte {
	if code, ok := legacyColors[name]; ok {
		return code
	}
	if name == "reset" {
		return 0
	}
	if len(name) == 7 && name[0] == '#' {
		rgb, err := strconv.ParseUint(name[1:], 16, 32)
		if err != nil {
			return cur
		}
		r, g, b := int(rgb>>16), int(rgb>>8&0xFF), int(rgb&0xFF)
		best, bestDist := byte('f'), 1<<30
		for _, p := range legacyPalette {
			if d := (r-p.r)*(r-p.r) + (g-p.g)*(g-p.g) + (b-p.b)*(b-p.b); d < bestDist {
				best, bestDist = p.code, d
			}
		}
		return best
	}
	return cur
}

// text writes s in style st.
func (w *legacyWriter) text(s string, st chatStyle) {
	if s == "" {
		return
	}
	if st != w.cur {
		added := st.flags &^ w.cur.flags
		if st.color == w.cur.color && st.flags == w.cur.flags|added {
			// Only new flags: they add to what is in force.
		} else {
			// A colour code clears the flags in force; §r clears everything.
			if st.color != 0 {
				w.b.WriteString("§")
				w.b.WriteByte(st.color)
			} else {
				w.b.WriteString("§r")
			}
			added = st.flags
		}
		for i, f := range legacyFormats {
			if added&(1<<i) != 0 {
				w.b.WriteString("§")
				w.b.WriteByte(f.code)
			}
		}
		w.cur = st
	}
	w.b.WriteString(s)
}
