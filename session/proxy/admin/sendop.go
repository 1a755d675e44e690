package admin

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// A send's progress. Each send (one session or a bulk drain) is an
// operation the admin API keeps, the last keptSends of them: its request
// answers its progress when its wait ends, GET /api/v1/sends/{id} at any
// time after, GET /api/v1/sends every one kept.

// keptSends is how many sends the admin API remembers.
const keptSends = 32

// SendResult is what became of one session's move.
type SendResult struct {
	Session string `json:"session"` // the client's address
	User    string `json:"user"`
	From    string `json:"from"` // the backend it was on
	To      string `json:"to,omitempty"`
	// Result is "queued" (waiting for a turn among its loop's moves at
	// once), "moving", "moved", or why the session was not moved.
	Result string `json:"result"`
	Moved  bool   `json:"moved"`
}

// SendResponse is a send's progress: its counts by where its moves are,
// and each session's result.
type SendResponse struct {
	ID       uint64       `json:"id"`
	Poll     string       `json:"poll"` // the path that answers this
	From     SendSelector `json:"from"`
	To       SendTarget   `json:"to"`
	PerLoop  int          `json:"per_loop"`
	Started  time.Time    `json:"started"`
	Finished *time.Time   `json:"finished,omitempty"`
	Done     bool         `json:"done"` // every move has ended
	Total    int          `json:"total"`
	Queued   int          `json:"queued"`
	Moving   int          `json:"moving"`
	Moved    int          `json:"moved"`
	NotMoved int          `json:"not_moved"`
	Results  []SendResult `json:"results"`
	// LoopsUnanswered counts the event loops that had not taken the send
	// when its request gave up waiting for them: their sessions are
	// missing, or join the send later.
	LoopsUnanswered int `json:"loops_unanswered,omitempty"`
}

// SendOp is one send: the moves of the sessions it picked, which end on
// the event loops, for whoever asks how far it is. Its zero value is
// ready (as a send no one polls).
type SendOp struct {
	mu      sync.Mutex
	head    SendResponse // its fields but the counts and results
	results []*SendResult
	pending int
	started bool // the loops have been asked
	changed chan struct{}
}

// SendItem is one session's move in a send.
type SendItem struct {
	op *SendOp
	r  *SendResult
}

// Add records a queued move of session (the client's address) of user from
// the backend from to to.
func (op *SendOp) Add(session, user, from, to string) *SendItem {
	op.mu.Lock()
	defer op.mu.Unlock()
	r := &SendResult{Session: session, User: user, From: from, To: to, Result: "queued"}
	op.results = append(op.results, r)
	op.pending++
	return &SendItem{op: op, r: r}
}

// Moving records that the move has started.
func (it *SendItem) Moving() {
	it.op.mu.Lock()
	defer it.op.mu.Unlock()
	it.r.Result = "moving"
}

// End records the move's outcome (nil: moved); it is called once, on any
// goroutine.
func (it *SendItem) End(err error) {
	op := it.op
	op.mu.Lock()
	defer op.mu.Unlock()
	it.r.Result, it.r.Moved = "moved", err == nil
	if err != nil {
		it.r.Result = err.Error()
	}
	op.pending--
	op.changedLocked()
}

// Started records that the loops took the send, but missing of them.
func (op *SendOp) Started(missing int) {
	op.mu.Lock()
	defer op.mu.Unlock()
	op.started, op.head.LoopsUnanswered = true, missing
	op.changedLocked()
}

// changedLocked wakes the waits once every move has ended.
func (op *SendOp) changedLocked() {
	if op.started && op.pending == 0 {
		if op.head.Finished == nil {
			now := time.Now()
			op.head.Finished = &now
		}
		if op.changed != nil {
			close(op.changed)
			op.changed = nil // a late loop's moves start another count
		}
	}
}

// Total is how many sessions the send picked so far.
func (op *SendOp) Total() int {
	op.mu.Lock()
	defer op.mu.Unlock()
	return len(op.results)
}

// Wait waits until every move added has ended or ctx ends, and returns
// the send's progress.
func (op *SendOp) Wait(ctx context.Context) SendResponse {
	op.mu.Lock()
	if !op.started || op.pending > 0 {
		if op.changed == nil {
			op.changed = make(chan struct{})
		}
		ch := op.changed
		op.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		}
		op.mu.Lock()
	}
	defer op.mu.Unlock()
	return op.progressLocked(true)
}

// progressLocked is the send's progress, with each session's result when
// results.
func (op *SendOp) progressLocked(results bool) SendResponse {
	out := op.head
	out.Done = op.started && op.pending == 0
	out.Total, out.Results = len(op.results), []SendResult{}
	for _, r := range op.results {
		switch {
		case r.Moved:
			out.Moved++
		case r.Result == "queued":
			out.Queued++
		case r.Result == "moving":
			out.Moving++
		default:
			out.NotMoved++
		}
		if results {
			out.Results = append(out.Results, *r)
		}
	}
	return out
}

// sendOps are the sends the admin API remembers.
type sendOps struct {
	mu   sync.Mutex
	last uint64
	ops  []*SendOp // oldest first, at most keptSends
}

// New starts remembering a send, forgetting the oldest beyond keptSends.
func (s *sendOps) New(from SendSelector, to SendTarget, perLoop int) *SendOp {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last++
	op := &SendOp{head: SendResponse{ID: s.last, Poll: "/api/v1/sends/" + strconv.FormatUint(s.last, 10),
		From: from, To: to, PerLoop: perLoop, Started: time.Now()}}
	if len(s.ops) == keptSends {
		s.ops = append(s.ops[:0], s.ops[1:]...)
	}
	s.ops = append(s.ops, op)
	return op
}

// find returns the send numbered id, nil when it is not remembered.
func (s *sendOps) find(id uint64) *SendOp {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, op := range s.ops {
		if op.head.ID == id {
			return op
		}
	}
	return nil
}

// serveSend serves GET /api/v1/sends/{id}: one send's progress.
func (h *handler) serveSend(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
	op := h.sends.find(id)
	if err != nil || op == nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no send %q: the admin API remembers the last %d (GET /api/v1/sends lists them)", r.PathValue("id"), keptSends))
		return
	}
	op.mu.Lock()
	res := op.progressLocked(true)
	op.mu.Unlock()
	writeJSON(w, http.StatusOK, res)
}

// serveSends serves GET /api/v1/sends: every send remembered, newest
// first, without each session's result.
func (h *handler) serveSends(w http.ResponseWriter, _ *http.Request) {
	h.sends.mu.Lock()
	ops := append([]*SendOp(nil), h.sends.ops...)
	h.sends.mu.Unlock()
	out := struct {
		Sends []SendResponse `json:"sends"`
	}{Sends: []SendResponse{}}
	for i := len(ops) - 1; i >= 0; i-- {
		ops[i].mu.Lock()
		out.Sends = append(out.Sends, ops[i].progressLocked(false))
		ops[i].mu.Unlock()
	}
	writeJSON(w, http.StatusOK, out)
}
