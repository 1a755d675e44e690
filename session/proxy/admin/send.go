package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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
// POST /api/v1/sessions/{id}/send takes the target alone. PerLoop bounds
// the moves the send runs at once on each event loop (DefaultPerLoop when
// 0, at most MaxPerLoop); the others wait their turn, queued. Wait is how
// long the request waits for the moves before it answers the send's
// progress (a Go duration up to MaxSendWait, which it is when empty; "0s"
// answers at once): the send goes on, GET /api/v1/sends/{id} follows it.
type SendRequest struct {
	From    SendSelector `json:"from"`
	To      SendTarget   `json:"to"`
	PerLoop int          `json:"per_loop,omitempty"`
	Wait    string       `json:"wait,omitempty"`
}

// Bounds of a send's moves at once on one event loop.
const (
	DefaultPerLoop = 16
	MaxPerLoop     = 256
)

// Sender is a Source that can move sessions.
type Sender interface {
	// StartSend starts moving the sessions sel picks to to, at most
	// perLoop at once on each event loop, each one recorded in op; it
	// waits for the loops until ctx ends and returns how many did not
	// answer (their sessions may join op later).
	StartSend(ctx context.Context, sel SendSelector, to SendTarget, perLoop int, op *SendOp) (loopsUnanswered int)
}

// MaxSendWait bounds how long a send's request waits for its moves.
const MaxSendWait = 30 * time.Second

// maxSendBody bounds a send's request body.
const maxSendBody = 4 << 10

// serveSendOne serves POST /api/v1/sessions/{id}/send.
func (h *handler) serveSendOne(w http.ResponseWriter, r *http.Request) {
	var to SendTarget
	if !readSendBody(w, r, &to) {
		return
	}
	h.send(w, r, SendRequest{From: SendSelector{ID: r.PathValue("id")}, To: to})
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
	h.send(w, r, req)
}

// send checks the request, starts the send and answers its progress: 200
// once every move has ended, 202 (Location: the send) while some go on.
func (h *handler) send(w http.ResponseWriter, r *http.Request, req SendRequest) {
	s, ok := h.src.(Sender)
	if !ok {
		writeError(w, http.StatusNotImplemented, "this proxy cannot move players")
		return
	}
	if (req.To.Group == "") == (req.To.Backend == "") {
		writeError(w, http.StatusBadRequest, `the target names a group or a backend: {"group": "lobby"} or {"backend": "10.0.0.5:25565"}`)
		return
	}
	wait, err := req.check()
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	op := h.sends.New(req.From, req.To, req.PerLoop)
	ctx, cancel := context.WithTimeout(r.Context(), adminTimeout)
	missing := s.StartSend(ctx, req.From, req.To, req.PerLoop, op)
	cancel()
	op.Started(missing)
	if req.From.ID != "" && op.Total() == 0 {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no session %q (a player's name or a client's address, as /api/v1/sessions lists them)", req.From.ID))
		return
	}
	ctx, cancel = context.WithTimeout(r.Context(), wait)
	defer cancel()
	res := op.Wait(ctx)
	code := http.StatusOK
	if !res.Done {
		code = http.StatusAccepted
		w.Header().Set("Location", res.Poll)
	}
	writeJSON(w, code, res)
}

// check fills in the request's defaults and returns its wait.
func (req *SendRequest) check() (time.Duration, error) {
	if req.PerLoop == 0 {
		req.PerLoop = DefaultPerLoop
	}
	if req.PerLoop < 0 || req.PerLoop > MaxPerLoop {
		return 0, fmt.Errorf(`"per_loop" %d: the moves at once on a loop are 1 to %d`, req.PerLoop, MaxPerLoop)
	}
	if req.Wait == "" {
		return MaxSendWait, nil
	}
	d, err := time.ParseDuration(req.Wait)
	if err != nil || d < 0 || d > MaxSendWait {
		return 0, fmt.Errorf(`"wait" %q: a Go duration from "0s" to %q`, req.Wait, MaxSendWait)
	}
	return d, nil
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
