package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tidegate/tidegate/internal/testkit/testredis"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
)

// TestLostWritesAreRepublished: Redis loses the last login it had
// acknowledged, as a replica promoted before that login reached it would,
// with no call failing and this proxy's other keys in place. The next
// heartbeat sees the write count go back and publishes the session again.
func TestLostWritesAreRepublished(t *testing.T) {
	rs := testredis.Start(t)
	a := testClient(t, rs.URL(), "proxy-a", Refuse, nil)
	login(t, a, "Steve", "")
	tk, ans := login(t, a, "Alex", "")
	if ans.Verdict != Accepted {
		t.Fatalf("login: %v", ans.Verdict)
	}
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The count as the login left it, less one: what a replica that missed
	// the login holds (the heartbeats' counts are lost with it).
	lose := redis.NewScript(`
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[2])
redis.call('SET', KEYS[3], ARGV[2], 'KEEPTTL')
return 1`)
	if err := lose.Run(ctx, rdb, []string{"tidegate:sessions:proxy-a", "tidegate:name:alex", "tidegate:gen:proxy-a"},
		tk.Token(), a.acked.Load()-1).Err(); err != nil {
		t.Fatal(err)
	}
	waitfor.Check(t, "the lost session published again", func() error {
		if ok, err := rdb.HExists(ctx, "tidegate:sessions:proxy-a", tk.Token()).Result(); err != nil || !ok {
			return fmt.Errorf("the session hash has %s: %v (%v); lost writes seen %d", tk.Token(), ok, err, a.LostWrites())
		}
		if owner, err := rdb.Get(ctx, "tidegate:name:alex").Result(); err != nil || owner != "proxy-a/"+tk.Token() {
			return fmt.Errorf("tidegate:name:alex is %q (%v)", owner, err)
		}
		return nil
	})
	if n := a.LostWrites(); n != 1 {
		t.Errorf("lost writes seen %d times, want 1", n)
	}
	if n := a.Conflicts(); n != 0 {
		t.Errorf("%d conflicts", n)
	}
}
