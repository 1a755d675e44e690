package cluster

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/internal/testkit/testredis"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/session/cluster/clusterconf"
)

// newTopologyClient starts a client of r as proxy id, stopped when the test
// ends.
func newTopologyClient(t *testing.T, r clusterconf.Redis, id string) *Client {
	t.Helper()
	cfg := testConfig(t, r, id, Refuse, func(any) {})
	// Failovers: calls give up sooner, logins wait less, and the breaker
	// opens after three failures; info lines show the failover's steps.
	cfg.Timeout, cfg.LoginWait, cfg.Queue, cfg.Failures = 500*time.Millisecond, time.Second, 256, 3
	cfg.Log = cfg.Log.Level(zerolog.InfoLevel)
	return startClient(t, cfg, true)
}

// churn logs players in through c, one after another, until stop is
// closed, and releases every third one at the next login; it counts the
// verdicts.
type churn struct {
	c    *Client
	stop chan struct{}
	done chan struct{}

	mu       sync.Mutex
	verdicts map[Verdict]int
	n        int
}

func startChurn(c *Client) *churn {
	ch := &churn{c: c, stop: make(chan struct{}), done: make(chan struct{}), verdicts: map[Verdict]int{}}
	go ch.run()
	return ch
}

func (ch *churn) run() {
	defer close(ch.done)
	var prev *Ticket
	for i := 0; ; i++ {
		select {
		case <-ch.stop:
			return
		default:
		}
		name := fmt.Sprintf("p%d", i)
		answers := make(chan Answer, 1)
		tk, a, wait := ch.c.Login(Session{Name: name, Host: "play.example", Backend: "main", Since: time.Now()}, Limits{}, name,
			func(a Answer) { answers <- a })
		if wait {
			a = <-answers // within LoginWait
		}
		if prev != nil {
			ch.c.Release(prev)
			prev = nil
		}
		if i%3 == 0 && (a.Verdict == Accepted || a.Verdict == Local) {
			prev = tk
		}
		ch.mu.Lock()
		ch.verdicts[a.Verdict]++
		ch.n++
		ch.mu.Unlock()
		time.Sleep(2 * time.Millisecond) // a login rate, not synchronisation
	}
}

// logins returns how many logins were answered so far.
func (ch *churn) logins() int {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.n
}

func (ch *churn) finish() map[Verdict]int {
	close(ch.stop)
	<-ch.done
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.verdicts
}

// published compares what Redis at addr holds of c's sessions with c's
// registry: every session the registry holds (conflicts apart) is in the
// session hash and owns its name key, and the hash holds nothing else.
func published(c *Client, addr string) error {
	c.mu.Lock()
	want := map[string]string{}
	conflicts := 0
	for tok, tk := range c.byToken {
		if tk.state == tkConflict {
			conflicts++
			continue
		}
		want[tok] = tk.lname
	}
	c.mu.Unlock()
	keys, err := testredis.Command(addr, "HKEYS", c.prefix+"sessions:"+c.ID())
	if err != nil {
		return err
	}
	got := strings.Fields(keys)
	var missing, extra []string
	for tok := range want {
		if !slices.Contains(got, tok) {
			missing = append(missing, tok)
		}
	}
	for _, tok := range got {
		if _, ok := want[tok]; !ok {
			extra = append(extra, tok)
		}
	}
	if len(missing) > 0 || len(extra) > 0 {
		return fmt.Errorf("Redis at %s lacks %d sessions of the registry (%.5q) and has %d it does not hold (%.5q); %d conflicts",
			addr, len(missing), missing, len(extra), extra, conflicts)
	}
	for tok, ln := range want {
		owner, err := testredis.Command(addr, "GET", c.prefix+"name:"+ln)
		if err != nil {
			return err
		}
		if owner != c.ID()+"/"+tok {
			return fmt.Errorf("%sname:%s is %q, want %s/%s", c.prefix, ln, owner, c.ID(), tok)
		}
	}
	return nil
}

// TestSentinelFailover: a master, a replica and three Sentinels; logins
// and releases go on through the Sentinel-backed client while the master is
// failed over (SENTINEL FAILOVER) and then killed. Afterwards the client
// works against the new master, Redis holds exactly the registry's
// sessions (none lost, none left over), and another proxy is refused
// every name the first one holds.
func TestSentinelFailover(t *testing.T) {
	master := testredis.Start(t)
	replica := master.StartReplica(t)
	ss := testredis.StartSentinels(t, "mymaster", master, 3, 2)
	waitfor.Check(t, "the replica linked to the master", func() error { return replica.ReplicaOf(master) })
	waitfor.Check(t, "the sentinels to know the master, its replica and each other", func() error { return ss.Agree(master.Addr(), 1) })
	r := clusterconf.Redis{Addrs: ss.Addrs(), MasterName: ss.Master}
	a := newTopologyClient(t, r, "proxy-a")
	b := newTopologyClient(t, r, "proxy-b")

	ch := startChurn(a)
	at := func(n int) func() bool { return func() bool { return ch.logins() >= n } }
	waitfor.For(t, "100 logins before the failover", at(100))
	if _, err := testredis.Command(ss.Servers[0].Addr(), "SENTINEL", "FAILOVER", ss.Master); err != nil {
		t.Fatal(err)
	}
	waitfor.Check(t, "the sentinels to name the replica the master", func() error { return ss.Name(replica.Addr()) })
	// The Sentinels make the old master a replica of the new one when
	// their INFO of it (every 10 s) finds it still a master, 8 s on; this
	// does what they will do, sooner.
	waitfor.Check(t, "the old master a replica of the new one", func() error { return master.ReplicaOf(replica) })
	n := ch.logins()
	waitfor.For(t, "100 logins after the failover", at(n+100))
	replica.Kill()
	waitfor.Check(t, "the sentinels to name the old master again", func() error { return ss.Name(master.Addr()) })
	n = ch.logins()
	waitfor.For(t, "100 logins after the kill", at(n+100))
	verdicts := ch.finish()

	waitfor.Check(t, "Redis to hold exactly the registry's sessions", func() error {
		if !a.Up() {
			return fmt.Errorf("the breaker is open")
		}
		return published(a, master.Addr())
	})
	tk, ans := login(t, a, "after", "")
	if ans.Verdict != Accepted {
		t.Fatalf("a login against the new master: %v", ans.Verdict)
	}
	a.Release(tk)
	a.mu.Lock()
	var names []string
	for _, tk := range a.byToken {
		if tk.state != tkConflict {
			names = append(names, tk.sess.Name)
		}
	}
	a.mu.Unlock()
	for _, name := range names {
		if tk, ans := login(t, b, strings.ToUpper(name), ""); ans.Verdict != Duplicate {
			t.Errorf("%s held on proxy-a, logged in on proxy-b: %v", name, ans.Verdict)
			b.Release(tk)
		}
	}
	t.Logf("logins %v, %d held; proxy-a: fallbacks %v, lost writes seen %d, conflicts %d, round trips %d",
		verdicts, len(names), a.Fallbacks(), a.LostWrites(), a.Conflicts(), a.RoundTrips())
}
