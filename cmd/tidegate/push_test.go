package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestPushHelpNamesTheBounds(t *testing.T) {
	var out bytes.Buffer
	app := testApp(&syncBuffer{})
	app.Writer = &out
	if err := app.Run([]string{"tidegate", "push", "--help"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"--high-watermark BYTES", "--not-writable-timeout", "(default: 30s)",
		"--buffer-budget BYTES", "(default: 1073741824)", "--max-topics",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("push --help lacks %q:\n%s", want, out.String())
		}
	}
}

func TestPushRefusesBadBounds(t *testing.T) {
	for _, c := range []struct{ flag, value, want string }{
		{"--buffer-budget", "-1", "buffer budget -1"},
		{"--not-writable-timeout", "-1s", "not-writable timeout -1s"},
		{"--max-topics", "0", "max topics 0"},
	} {
		err := testApp(&syncBuffer{}).Run([]string{"tidegate", "push", "--publish-listen", "127.0.0.1:0",
			"--subscribe-listen", "127.0.0.1:0", c.flag, c.value})
		if code := exitCode(err); code != exitConfig || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: exit code %d (%v), want %d naming %q", c.flag, c.value, code, err, exitConfig, c.want)
		}
	}
}
