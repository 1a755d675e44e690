package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/gomcbot"
	"github.com/tidegate/tidegate/internal/testkit/testserver"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/session/mcbackend"
	"github.com/tidegate/tidegate/session/proxy/admin"
)

// adminPost posts body to url and returns the status, the Location header
// and the send's progress it answers (when 200 or 202).
func adminPost(t testing.TB, url, body string) (int, string, admin.SendResponse, string) {
	t.Helper()
	client := &http.Client{Timeout: 40 * time.Second}
	resp, err := client.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var res admin.SendResponse
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusAccepted {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&res); err != nil {
			t.Fatalf("POST %s: %v in %s", url, err, raw)
		}
	}
	return resp.StatusCode, resp.Header.Get("Location"), res, string(raw)
}

// pollSend follows the send at base+path until it is done, checking on
// each answer that at most most moves run at once and the counts add up.
func pollSend(t *testing.T, base, path string, total, most int) admin.SendResponse {
	t.Helper()
	var res admin.SendResponse
	waitfor.Check(t, "the send at "+path+" to end", func() error {
		res = admin.SendResponse{}
		if code, body := adminGet(t, base+path, &res); code != http.StatusOK {
			return fmt.Errorf("GET %s: %d %s", path, code, body)
		}
		checkSendCounts(t, res, total, most)
		if !res.Done {
			return fmt.Errorf("%d queued, %d moving", res.Queued, res.Moving)
		}
		return nil
	})
	return res
}

// checkSendCounts fails t when res does not count total sessions, or runs
// more than most moves at once.
func checkSendCounts(t *testing.T, res admin.SendResponse, total, most int) {
	t.Helper()
	if res.Total != total || len(res.Results) != total || res.Queued+res.Moving+res.Moved+res.NotMoved != total || res.Moving > most {
		t.Fatalf("send %d: total %d (%d results), %d queued + %d moving + %d moved + %d not moved; want %d, at most %d moving",
			res.ID, res.Total, len(res.Results), res.Queued, res.Moving, res.Moved, res.NotMoved, total, most)
	}
}

// TestBulkSendProgress: POST /api/v1/send with "wait": "0s" answers 202
// with the send's progress and where to poll it; its moves run at most
// per_loop at once on each loop, the others queued, and each player's
// result names its error. A drain of a backend that hangs every login
// (each move times out) runs two at a time (two loops, one each) and
// leaves every player where it was, playing; a drain to a live backend
// then moves them all, and the send's answer says so.
func TestBulkSendProgress(t *testing.T) {
	checkNoLeaks(t)
	sa, sb, a, b := startMoveBackends(t, mcbackend.ForwardNone, false)
	hang := testserver.Conns(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) }) // takes the login, never answers
	cfg := moveConfig(t, a, b, "none", "") + fmt.Sprintf("  h: {backends: [{addr: %q}], login: offline, forwarding: none}\n", hang) +
		"limits: {connect_timeout: 300ms, handshake_timeout: 300ms}\n"
	p, addr := startProxy(t, cfg)
	base := serveAdmin(t, p, "127.0.0.1:0")
	const players = 6
	var bots []*gomcbot.Bot
	for i := range players {
		bots = append(bots, gomcbot.Join(t, addr, fmt.Sprintf("Drained%d", i), 60*time.Second))
	}

	for _, bad := range []string{`{"from": {"group": "a"}, "to": {"group": "h"}, "per_loop": 300}`,
		`{"from": {"group": "a"}, "to": {"group": "h"}, "wait": "1h"}`, `{"from": {"group": "a"}, "to": {"group": "h"}, "wait": "soon"}`} {
		if code, _, _, body := adminPost(t, base+"/api/v1/send", bad); code != http.StatusBadRequest {
			t.Errorf("POST %s: %d %s, want 400", bad, code, body)
		}
	}

	code, loc, res, body := adminPost(t, base+"/api/v1/send", `{"from": {"group": "a"}, "to": {"group": "h"}, "per_loop": 1, "wait": "0s"}`)
	if code != http.StatusAccepted || loc == "" || loc != res.Poll || res.Done {
		t.Fatalf("a send that waits 0s: %d, Location %q, %s; want 202 and where to poll", code, loc, body)
	}
	checkSendCounts(t, res, players, 2)
	if res.Moving != 2 || res.Queued != players-2 { // each move hangs until its timeout
		t.Fatalf("just started: %d moving, %d queued; want 2 and %d", res.Moving, res.Queued, players-2)
	}
	res = pollSend(t, base, loc, players, 2)
	if res.NotMoved != players || res.Finished == nil {
		t.Fatalf("the drain to a hanging backend: %+v, want every move failed", res)
	}
	for _, r := range res.Results {
		if r.Moved || !strings.Contains(r.Result, hang) || !strings.Contains(r.Result, "timed out") {
			t.Fatalf("result %+v, want the timeout naming %s", r, hang)
		}
	}
	for _, bot := range bots {
		bot.Echo(t, []byte("still on a"))
	}
	if n := sa.Stats().Playing; n != players {
		t.Fatalf("a has %d players, want %d", n, players)
	}

	var list struct {
		Sends []admin.SendResponse `json:"sends"`
	}
	if code, body := adminGet(t, base+"/api/v1/sends", &list); code != http.StatusOK || len(list.Sends) != 1 || list.Sends[0].ID != res.ID {
		t.Fatalf("GET /api/v1/sends: %d %s", code, body)
	}
	if code, body := adminGet(t, base+"/api/v1/sends/999", nil); code != http.StatusNotFound {
		t.Fatalf("GET /api/v1/sends/999: %d %s, want 404", code, body)
	}

	code, _, res, body = adminPost(t, base+"/api/v1/send", `{"from": {"backend": "`+a+`"}, "to": {"group": "b"}, "per_loop": 2}`)
	if code != http.StatusOK || !res.Done || res.Moved != players {
		t.Fatalf("a drain of %s to b: %d %s", a, code, body)
	}
	checkSendCounts(t, res, players, 4)
	for _, bot := range bots {
		bot.WaitLogins(t, 2)
		bot.Echo(t, []byte("on b"))
	}
	waitfor.Value(t, "b's players", func() int64 { return sb.Stats().Playing }, func(n int64) bool { return n == players })
	waitfor.Value(t, "a's players gone", func() int64 { return sa.Stats().Playing }, func(n int64) bool { return n == 0 })
}
