package status

import (
	"context"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/proxy/config"
)

// Waiter is what waits for a group's refresh (a session of the proxy),
// answered on its own loop.
type Waiter interface {
	// Loop is the loop Ready runs on.
	Loop() *reactor.Loop
	// Ready takes the result of the refresh it waited for.
	Ready(e Entry)
}

// Group is a group's status answers: its cache and its offline answer.
type Group[W Waiter] struct {
	Offline *Reply
	Cache   Cache[W]
}

// NewGroup builds the status answers of a group whose offline answer is
// o's, with text as its description.
func NewGroup[W Waiter](o config.OfflineStatusConfig, text string) *Group[W] {
	return &Group[W]{Offline: Offline(o, text)}
}

// Refresh refreshes g's cached status in the background, with fetch on a
// goroutine of r, and hands the result to the waiters. Once r has stopped,
// the waiters get the offline answer (an entry expiring at now) at once.
func (g *Group[W]) Refresh(r *Refresher, now int64, fetch func(ctx context.Context) Entry) {
	ok := r.Spawn(func(ctx context.Context) {
		g.finish(fetch(ctx))
	})
	if !ok { // stopping: the waiters get the offline answer
		g.finish(Entry{Expires: now})
	}
}

// finish caches e and answers each waiter, on its loop.
func (g *Group[W]) finish(e Entry) {
	byLoop := map[*reactor.Loop][]W{}
	for _, w := range g.Cache.Complete(e) {
		l := w.Loop()
		byLoop[l] = append(byLoop[l], w)
	}
	for l, ws := range byLoop {
		// An error means the loop has stopped, and its sessions with it.
		_ = l.Execute(func() {
			for _, w := range ws {
				w.Ready(e)
			}
		})
	}
}

// Fetch fetches the status of group name from up, its backends that are
// up, with net's players (see FetchGroup), and returns the entry to cache:
// it expires st.CacheTTL after now, and has no Reply when the fetch failed
// (logged to log). It counts the refresh.
func (r *Refresher) Fetch(ctx context.Context, log *zerolog.Logger, st config.StatusConfig, name string, up []Backend, net *Players, now int64) Entry {
	start := time.Now()
	reply, err := FetchGroup(ctx, st, name, up, net)
	e := Entry{Reply: reply, Expires: now + int64(st.CacheTTL)}
	r.Counted(err == nil)
	if err != nil {
		if ctx.Err() == nil {
			log.Warn().Str("group", name).Err(err).Dur("cache_ttl", st.CacheTTL).
				Msg("status refresh failed: pings get the offline answer until the next refresh")
		}
		return e
	}
	log.Debug().Str("group", name).Dur("took", time.Since(start)).Msg("status refreshed")
	return e
}
