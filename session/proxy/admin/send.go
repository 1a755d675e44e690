package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// Sending players. POST /api/v1/sessions/{id}/send moves one session (id:
// its player's name or its client's address, as /api/v1/sessions lists
// them), POST /api/v1/send every session of a group or backend (from), to
// a group or backend (to). Both are writes: the metrics address lets them
// through only with its write token (internal/adminaccess).

// SendTarget is where a send goes: a group (a backend of it chosen as for
// a login) or one backend's address.
type SendTarget struct {
	Group   string `json:"group,omitempty"`
	Backend string `json:"backend,omitempty"`
}

// SendSelector picks the sessions a send moves: one by ID, or every one
// of a group or on a backend.
type SendSelector struct {
	ID      string `json:"id,omitempty"`
	Group   string `json:"group,omitempty"`
	Backend string `json:"backend,omitempty"`
}

// SendRequest is the body of POST /api/v1/send: From picks the sessions;
// POST /api/v1/sessions/{id}/send takes the target alone.
type SendRequest struct {
	From SendSelector `json:"from"`
	To   SendTarget   `json:"to"`
}

// SendResult is what became of one session's move.
type SendResult struct {
	Session string `json:"session"` // the client's address
	User    string `json:"user"`
	From    string `json:"from"` // the backend it was on
	To      string `json:"to,omitempty"`
	// Result is "moved", "in progress" (not over when the request's wait
	// ended), or why the session was not moved.
	Result string `json:"result"`
	Moved  bool   `json:"moved"`
}

// SendResponse is the answer of a send.
type SendResponse struct {
	Results         []SendResult `json:"results"`
	Moved           int          `json:"moved"`
	NotMoved        int          `json:"not_moved"`
	LoopsUnanswered int          `json:"loops_unanswered,omitempty"`
}

// Sender is a Source that can move sessions.
type Sender interface {
	// Send moves the sessions sel picks to to and returns each one's
	// result, waiting for the moves until ctx ends.
	Send(ctx context.Context, sel SendSelector, to SendTarget) SendResponse
}

// MaxSendWait bounds how long a send waits for its moves.
const MaxSendWait = 30 * time.Second

// maxSendBody bounds a send's request body.
const maxSendBody = 4 << 10

// serveSendOne serves POST /api/v1/sessions/{id}/send.
func (h *handler) serveSendOne(w http.ResponseWriter, r *http.Request) {
	var to SendTarget
	if !readSendBody(w, r, &to) {
		return
	}
	h.send(w, r, SendSelector{ID: r.PathValue("id")}, to)
}

// serveSendAll serves POST /api/v1/send.
func (h *handler) serveSendAll(w http.ResponseWriter, r *http.Request) {
	var req SendRequest
	if !readSendBody(w, r, &req) {
		return
	}
	if (req.From.Group == "") == (req.From.Backend == "") || req.From.ID != "" {
		writeError(w, http.StatusBadRequest, `"from" names a group or a backend: {"from": {"group": "game"}, "to": {"group": "lobby"}}`)
		return
	}
	h.send(w, r, req.From, req.To)
}

// send checks the target and runs the send.
func (h *handler) send(w http.ResponseWriter, r *http.Request, sel SendSelector, to SendTarget) {
	s, ok := h.src.(Sender)
	if !ok {
		writeError(w, http.StatusNotImplemented, "this proxy cannot move players")
		return
	}
	if (to.Group == "") == (to.Backend == "") {
		writeError(w, http.StatusBadRequest, `the target names a group or a backend: {"group": "lobby"} or {"backend": "10.0.0.5:25565"}`)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), MaxSendWait)
	defer cancel()
	res := s.Send(ctx, sel, to)
	if sel.ID != "" && len(res.Results) == 0 {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no session %q (a player's name or a client's address, as /api/v1/sessions lists them)", sel.ID))
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// readSendBody decodes a send's JSON body into v, answering 400 when it
// is not one.
func readSendBody(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxSendBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("the body is not a send request: %v", err))
		return false
	}
	return true
}

// SendBatch gathers the results of a send's moves, which end on the event
// loops, for the request that waits for them. Its zero value is ready.
type SendBatch struct {
	mu      sync.Mutex
	results []*SendResult
	pending int
	done    chan struct{}
}

// Add records a move of session (the client's address) of user from the
// backend from; the move's outcome goes to the function it returns, to be
// called once, on any goroutine (nil: moved).
func (b *SendBatch) Add(session, user, from, to string) func(error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := &SendResult{Session: session, User: user, From: from, To: to, Result: "in progress"}
	b.results = append(b.results, r)
	b.pending++
	return func(err error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		r.Result, r.Moved = "moved", err == nil
		if err != nil {
			r.Result = err.Error()
		}
		if b.pending--; b.pending == 0 && b.done != nil {
			close(b.done)
			b.done = nil // a late loop's move may start another wait's count
		}
	}
}

// Wait waits until every move added has ended or ctx ends, and returns
// the results; missing is how many event loops did not answer (their
// sessions are not in it).
func (b *SendBatch) Wait(ctx context.Context, missing int) SendResponse {
	b.mu.Lock()
	if b.pending > 0 {
		b.done = make(chan struct{})
		done := b.done
		b.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
		}
		b.mu.Lock()
	}
	defer b.mu.Unlock()
	out := SendResponse{Results: []SendResult{}, LoopsUnanswered: missing}
	for _, r := range b.results {
		out.Results = append(out.Results, *r)
		if r.Moved {
			out.Moved++
		} else {
			out.NotMoved++
		}
	}
	return out
}

// Picks reports whether sel picks the session of player user, whose client
// is at remote, on backend of group.
func (sel SendSelector) Picks(user, remote, group, backend string) bool {
	switch {
	case sel.ID != "":
		return sel.ID == user || sel.ID == remote
	case sel.Group != "":
		return sel.Group == group
	}
	return sel.Backend != "" && sel.Backend == backend
}
