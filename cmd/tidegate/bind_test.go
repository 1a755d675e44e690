package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestStartLinesLogTheBoundAddress: every command told to listen on
// 0.0.0.0:0 says, on its start line, the IPv4 wildcard and the port it
// got, as bound: 0.0.0.0 binds IPv4 only, so the address is not [::].
func TestStartLinesLogTheBoundAddress(t *testing.T) {
	ipv4Wildcard := regexp.MustCompile(`^0\.0\.0\.0:[1-9][0-9]*$`)
	proxyYAML := writeConfig(t, "listeners:\n  - listen: 0.0.0.0:0\ndefault_group: main\ngroups:\n  main:\n    backends:\n      - {addr: 127.0.0.1:1}\nloops: 1\n")
	for _, tc := range []struct {
		argv    []string
		message string
		keys    []string // the fields holding bound addresses
	}{
		{[]string{"proxy", "-c", proxyYAML}, "proxy listening", []string{"bound"}},
		{[]string{"serve", "--listen", "0.0.0.0:0", "--loops", "1"}, "TLV server listening", []string{"listen"}},
		{[]string{"push", "--publish-listen", "0.0.0.0:0", "--subscribe-listen", "0.0.0.0:0", "--loops", "1"}, "push server listening", []string{"publish", "subscribe"}},
		{[]string{"backend", "--listen", "0.0.0.0:0", "--loops", "1"}, "fake Minecraft backend listening", []string{"listen"}},
	} {
		argv := append(tc.argv, "--metrics-listen", "0.0.0.0:0", "--log-format", "json")
		logs := runUntilListening(t, argv...)
		lines := map[string]map[string]any{}
		for _, l := range logs.logLines(t) {
			if msg, _ := l["message"].(string); msg == tc.message || strings.HasPrefix(msg, "metrics listening") {
				lines[msg] = l
			}
		}
		start, ok := lines[tc.message]
		if !ok {
			t.Errorf("%s: no %q line in\n%s", tc.argv[0], tc.message, logs)
			continue
		}
		checkBound := func(line map[string]any, key string) {
			var addrs []any
			switch v := line[key].(type) {
			case string:
				addrs = []any{v}
			case []any:
				addrs = v
			}
			if len(addrs) == 0 {
				t.Errorf("%s: %q line has no %s: %v", tc.argv[0], line["message"], key, line)
			}
			for _, a := range addrs {
				if s, _ := a.(string); !ipv4Wildcard.MatchString(s) {
					t.Errorf("%s: %q line says %s %v, want 0.0.0.0:PORT", tc.argv[0], line["message"], key, a)
				}
			}
		}
		for _, key := range tc.keys {
			checkBound(start, key)
		}
		found := false
		for msg, l := range lines {
			if msg != tc.message {
				found = true
				checkBound(l, "listen")
			}
		}
		if !found {
			t.Errorf("%s: no metrics listening line in\n%s", tc.argv[0], logs)
		}
	}
}
