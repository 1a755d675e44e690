package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/protocol/mc"
)

// decodeStrict decodes one JSON object, failing on a key that appears twice
// in any object (encoding/json would keep the last one silently).
func decodeStrict(line []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	v, err := strictValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("more after the object (%v)", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("a %T, not an object", v)
	}
	return m, nil
}

func strictValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		m := map[string]any{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			key := kt.(string)
			if _, dup := m[key]; dup {
				return nil, fmt.Errorf("key %q appears twice", key)
			}
			if m[key], err = strictValue(dec); err != nil {
				return nil, err
			}
		}
		_, err := dec.Token() // '}'
		return m, err
	case json.Delim('['):
		var a []any
		for dec.More() {
			v, err := strictValue(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.Token() // ']'
		return a, err
	}
	return tok, nil
}

func TestDecodeStrictFindsDuplicateKeys(t *testing.T) {
	for _, bad := range []string{
		`{"component":"demo-backend","component":"gnet"}`,
		`{"a":{"b":1,"b":2}}`,
		`{"a":[{"b":1,"b":2}]}`,
		`{"a":1} {"b":2}`,
		`[1]`,
	} {
		if _, err := decodeStrict([]byte(bad)); err == nil {
			t.Errorf("%s was accepted", bad)
		}
	}
	if m, err := decodeStrict([]byte(`{"a":{"b":1},"b":[1,{"a":2}],"c":"x"}`)); err != nil || len(m) != 3 {
		t.Fatalf("a valid object: %v, %v", m, err)
	}
}

// durationKey matches the log fields that hold durations.
var durationKey = regexp.MustCompile(`(^|_)(timeout|uptime|took|elapsed|idle|cooldown|latency|linger|window|heartbeat|interval|poll)$`)

// hostPort finds IPv4 addresses with ports in a string.
var hostPort = regexp.MustCompile(`\d+\.\d+\.\d+\.\d+:\d+`)

// readMCFrame reads one Minecraft frame and returns its packet id and data.
func readMCFrame(r *bufio.Reader) (int32, []byte, error) {
	var n, shift int32
	for {
		b, err := r.ReadByte()
		if err != nil {
			return 0, nil, err
		}
		n |= int32(b&0x7f) << shift
		if b&0x80 == 0 {
			break
		}
		if shift += 7; shift > 21 {
			return 0, nil, errors.New("frame length over 3 bytes")
		}
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, err
	}
	return mc.ParsePacketID(body)
}

// TestJSONLogsOfARealSession runs the real proxy with its demo backend as a
// child process, the global flags before the command, with JSON logs at
// debug level: a status ping, a login that plays, and a login to a group
// whose backend refuses. Every line it writes must be one JSON object with
// no key twice; there is one start line and one stop line; durations carry
// their unit; an error names an address once; nothing is coloured.
func TestJSONLogsOfARealSession(t *testing.T) {
	listen, backend, down := freePort(t), freePort(t), refusedAddr(t)
	cfgPath := filepath.Join(t.TempDir(), "proxy.yaml")
	cfgText := fmt.Sprintf(`listeners: [{listen: %q}]
default_group: main
routes: [{hosts: [down.test], group: down}]
groups:
  main: {backends: [{addr: %q}]}
  down: {backends: [{addr: %q}]}
loops: 1
`, listen, backend, down)
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	// NO_COLOR emptied: no colour must come from the output being a file,
	// not from a NO_COLOR in the environment.
	ch := startChildEnv(t, 0, []string{"NO_COLOR="}, "--log-format", "json", "--log-level", "debug", "proxy", "--config", cfgPath, "--demo")
	logPath := ch.logPath
	waitListening(t, ch, listen)

	session := func(host string, next int32, then []byte, until func(id int32) bool) {
		t.Helper()
		c, err := net.DialTimeout("tcp", listen, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		hs := mc.AppendHandshake(nil, mc.Handshake{ProtocolVersion: mc.Protocol1_7_10, Address: []byte(host), Port: 25565, NextState: next})
		if _, err := c.Write(append(hs, then...)); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(c)
		for {
			id, _, err := readMCFrame(r)
			if err != nil {
				t.Fatalf("%s: reading: %v", host, err)
			}
			if until(id) {
				return
			}
		}
	}
	ping := mc.AppendPacket(nil, 0x01, []byte{1, 2, 3, 4, 5, 6, 7, 8})
	session("localhost", mc.NextStateStatus, append(mc.AppendPacket(nil, 0x00, nil), ping...), func(id int32) bool { return id == 0x01 })
	loginStart := mc.AppendPacket(nil, mc.PacketLoginStart, mc.AppendString(nil, []byte("Logger")))
	session("localhost", mc.NextStateLogin, loginStart, func(id int32) bool { return id == mc.PacketLoginSuccess })
	session("down.test", mc.NextStateLogin, loginStart, func(id int32) bool { return id == 0x00 }) // the offline disconnect

	ch.terminate(t, 30*time.Second)

	out, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte("\x1b[")) {
		t.Error("the log file holds ANSI escape codes")
	}
	sum := sha256.Sum256([]byte(cfgText))
	var starts, stops, gnetDemo, refusedErrs int
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		m, err := decodeStrict(line)
		if err != nil {
			t.Errorf("line %d: %v: %s", n, err, line)
			continue
		}
		for k, v := range m {
			s, isString := v.(string)
			if durationKey.MatchString(k) {
				if _, err := time.ParseDuration(s); !isString || err != nil {
					t.Errorf("line %d: %s=%v is not a duration with a unit: %s", n, k, v, line)
				}
			}
			seen := map[string]bool{}
			for _, a := range hostPort.FindAllString(s, -1) {
				if seen[a] {
					t.Errorf("line %d: %s names %s %d times: %q", n, k, a, strings.Count(s, a), s)
					break
				}
				seen[a] = true
			}
		}
		if e, _ := m["error"].(string); strings.Contains(e, down) {
			refusedErrs++
		}
		if m["source"] == "gnet" && m["component"] == "demo-backend" {
			gnetDemo++
		}
		switch m["message"] {
		case startMessage:
			starts++
			if m["config_sha256"] != hex.EncodeToString(sum[:]) || m["config"] != cfgPath || m["command"] != "proxy" {
				t.Errorf("start line names another configuration: %s", line)
			}
			for _, k := range []string{"version", "revision", "go", "pid", "fd_limit", "max_sessions", "loops"} {
				if _, ok := m[k]; !ok {
					t.Errorf("start line lacks %s: %s", k, line)
				}
			}
		case "stopped":
			stops++
			up, _ := time.ParseDuration(fmt.Sprint(m["uptime"]))
			if m["cause"] != "terminated" || up <= 0 || fmt.Sprint(m["exit_status"]) != "0" {
				t.Errorf("stop line: want cause terminated, an uptime, exit status 0: %s", line)
			}
		}
	}
	if starts != 1 || stops != 1 {
		t.Errorf("%d start lines and %d stop lines, want one each", starts, stops)
	}
	if gnetDemo == 0 || refusedErrs == 0 {
		t.Errorf("the run did not log what it is meant to check: %d gnet lines of the demo backend, %d errors naming %s",
			gnetDemo, refusedErrs, down)
	}
}
