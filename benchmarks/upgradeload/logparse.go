package upgradeload

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

// The proxy's log messages about a live upgrade that a trial reads.
const (
	msgHandedOver = "upgrade: sessions handed over"                 // the old process, once it is done
	msgTookOver   = "upgrade: took over the old process's sessions" // the new process, once the old closed the socket
	// msgUpgradeFailed: the old process gave the upgrade up and serves on.
	msgUpgradeFailed = "live upgrade failed"
)

// LoggedFigure is a hand-over line of the proxy's log.
type LoggedFigure struct {
	Level    string  `json:"level"`
	Sessions int     `json:"sessions"`
	TookMs   float64 `json:"took_ms"`
	// Left is the old process's sessions still open after the hand-over
	// (-1 where the line has none).
	Left  int64  `json:"left"`
	Error string `json:"error,omitempty"`
}

// maxLogLines bounds the lines a trial keeps from the proxy's log (at info
// a trial's log has about twenty: nothing per session).
const maxLogLines = 60

// readLog reads the proxy's log (both processes write to it): the
// hand-over figures, and lines for the report: every upgrade line, warning
// and error, and the others while there are few.
// An error line, a line that is not JSON (a panic), or a hand-over that
// left sessions behind fails the trial; with upgraded, so does a missing
// hand-over or take-over line.
func readLog(t *Trial, fails *failureLog, upgraded bool) {
	f, err := os.Open(t.ProxyLog)
	if err != nil {
		fails.trial("reading the proxy's log: %v", err)
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	errorsSeen, foreign := 0, 0
	keep := func(line string, important bool) {
		if len(t.LogLines) < maxLogLines || important && len(t.LogLines) < 2*maxLogLines {
			if len(line) > 600 {
				line = line[:600] + "..."
			}
			t.LogLines = append(t.LogLines, line)
		}
	}
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			if foreign++; foreign <= 3 {
				fails.trial("the proxy's log line %d is not a log record: %.300s", n, line)
			}
			keep(line, true)
			continue
		}
		level, _ := m["level"].(string)
		msg, _ := m["message"].(string)
		switch msg {
		case msgHandedOver:
			t.LoggedHandover = figure(m, level)
			if t.LoggedHandover.Left != 0 || level != "info" {
				fails.trial("the old process's hand-over: %s", line)
			}
		case msgTookOver:
			t.LoggedTakeover = figure(m, level)
		}
		switch {
		case level == "error" || level == "fatal" || level == "panic":
			if errorsSeen++; errorsSeen <= 5 {
				fails.trial("the proxy logged an error (line %d): %.400s", n, line)
			}
			keep(line, true)
		default:
			keep(line, level == "warn" || strings.Contains(msg, "upgrade") || strings.Contains(msg, "SIGUSR2"))
		}
	}
	if err := sc.Err(); err != nil {
		fails.trial("reading the proxy's log %s: %v", t.ProxyLog, err)
	}
	if errorsSeen > 5 {
		fails.trial("the proxy logged %d errors in all", errorsSeen)
	}
	if !upgraded {
		return
	}
	switch {
	case t.LoggedHandover == nil:
		fails.trial("no %q line in the proxy's log %s", msgHandedOver, t.ProxyLog)
	case t.LoggedTakeover == nil:
		fails.trial("no %q line in the proxy's log %s", msgTookOver, t.ProxyLog)
	case t.LoggedTakeover.Sessions != t.LoggedHandover.Sessions:
		fails.trial("the old process logged %d sessions handed over, the new one %d taken over", t.LoggedHandover.Sessions, t.LoggedTakeover.Sessions)
	}
	if t.LoggedHandover != nil && t.LoggedHandover.Sessions != t.Sessions {
		fails.trial("the old process handed over %d sessions, the trial had %d", t.LoggedHandover.Sessions, t.Sessions)
	}
}

// figure reads a hand-over line's fields: sessions, took (a duration with
// its unit, as tidegate logs durations), left and error. A took that does
// not parse is -1, not 0, so that a report cannot show a hand-over as free.
func figure(m map[string]any, level string) *LoggedFigure {
	f := &LoggedFigure{Level: level, Left: -1, TookMs: -1}
	if v, ok := m["sessions"].(float64); ok {
		f.Sessions = int(v)
	}
	if v, ok := m["took"].(string); ok {
		if d, err := time.ParseDuration(v); err == nil {
			f.TookMs = float64(d) / float64(time.Millisecond)
		}
	}
	if v, ok := m["left"].(float64); ok {
		f.Left = int64(v)
	}
	if v, ok := m["error"]; ok {
		f.Error = fmt.Sprint(v)
	}
	return f
}
