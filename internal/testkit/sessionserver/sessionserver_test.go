package sessionserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"
)

const steveUUID = "b50ad385829d3141a2167e7d7539ba7f"

func hasJoined(t *testing.T, s *Server, user, serverID, ip string) (int, profileJSON) {
	t.Helper()
	q := url.Values{"username": {user}, "serverId": {serverID}}
	if ip != "" {
		q.Set("ip", ip)
	}
	resp, err := http.Get(s.URL + "/session/minecraft/hasJoined?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p profileJSON
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode, p
}

func post(t *testing.T, c *http.Client, u, body string) int {
	t.Helper()
	resp, err := c.Post(u, "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func TestJoinThenHasJoined(t *testing.T) {
	s := Start(t)
	s.AddPlayer(Player{Name: "Steve", UUID: steveUUID, AccessToken: "tok", Properties: []Property{{Name: "textures", Value: "dGV4", Signature: "c2ln"}}})
	join := s.URL + "/session/minecraft/join"
	if code := post(t, http.DefaultClient, join, `{"accessToken":"wrong","selectedProfile":"`+steveUUID+`","serverId":"abc"}`); code != http.StatusForbidden {
		t.Fatalf("join with a wrong token: %d, want 403", code)
	}
	if code, _ := hasJoined(t, s, "Steve", "abc", ""); code != http.StatusNoContent {
		t.Fatalf("hasJoined before the join: %d, want 204", code)
	}
	// The vanilla form (a string) and go-mc's (an object).
	if code := post(t, http.DefaultClient, join, `{"accessToken":"tok","selectedProfile":"`+steveUUID+`","serverId":"abc"}`); code != http.StatusNoContent {
		t.Fatalf("join: %d, want 204", code)
	}
	if code := post(t, http.DefaultClient, join, `{"accessToken":"tok","selectedProfile":{"id":"b50ad385-829d-3141-a216-7e7d7539ba7f","name":"Steve"},"serverId":"-12"}`); code != http.StatusNoContent {
		t.Fatalf("join with a profile object: %d, want 204", code)
	}
	if j := s.Joins(); len(j) != 2 || j[0] != (Join{AccessToken: "tok", SelectedProfile: steveUUID, ServerID: "abc", RemoteIP: "127.0.0.1"}) || j[1].ServerID != "-12" {
		t.Fatalf("joins %+v", j)
	}
	code, p := hasJoined(t, s, "Steve", "abc", "")
	if code != http.StatusOK || p.ID != steveUUID || p.Name != "Steve" || len(p.Properties) != 1 || p.Properties[0].Signature != "c2ln" {
		t.Fatalf("hasJoined: %d %+v", code, p)
	}
	for _, c := range []struct{ user, id, ip string }{{"Alex", "abc", ""}, {"Steve", "abd", ""}, {"Steve", "abc", "203.0.113.9"}} {
		if code, _ := hasJoined(t, s, c.user, c.id, c.ip); code != http.StatusNoContent {
			t.Fatalf("hasJoined %+v: %d, want 204", c, code)
		}
	}
	if code, _ := hasJoined(t, s, "Steve", "abc", "127.0.0.1"); code != http.StatusOK {
		t.Fatalf("hasJoined from the join's address: %d", code)
	}
	if q := s.Queries(); len(q) != 6 || q[5] != (Query{Username: "Steve", ServerID: "abc", IP: "127.0.0.1", HasIP: true}) || q[0].HasIP {
		t.Fatalf("queries %+v", q)
	}

	s.Refuse(true)
	if code, _ := hasJoined(t, s, "Steve", "abc", ""); code != http.StatusNoContent {
		t.Fatalf("refusing: %d, want 204", code)
	}
	s.Refuse(false)
	s.FailWith(http.StatusServiceUnavailable)
	if code, _ := hasJoined(t, s, "Steve", "abc", ""); code != http.StatusServiceUnavailable {
		t.Fatalf("failing: %d, want 503", code)
	}
	s.FailWith(0)
	s.Delay(200 * time.Millisecond)
	start := time.Now()
	if code, _ := hasJoined(t, s, "Steve", "abc", ""); code != http.StatusOK || time.Since(start) < 200*time.Millisecond {
		t.Fatalf("delayed: %d after %v", code, time.Since(start))
	}
}

// TestRedirectDefaultClient is how go-mc's bot reaches the fake.
func TestRedirectDefaultClient(t *testing.T) {
	s := Start(t)
	s.AddPlayer(Player{Name: "Steve", UUID: steveUUID, AccessToken: "tok"})
	s.RedirectDefaultClient(t)
	body := `{"accessToken":"tok","selectedProfile":{"id":"` + steveUUID + `","name":"Steve"},"serverId":"x"}`
	if code := post(t, http.DefaultClient, "https://"+MojangHost+"/session/minecraft/join", body); code != http.StatusNoContent {
		t.Fatalf("redirected join: %d, want 204", code)
	}
	if len(s.Joins()) != 1 {
		t.Fatal("the join did not reach the fake")
	}
}
