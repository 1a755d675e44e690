package pushload

import (
	"context"
	"testing"
	"time"

	"github.com/tidegate/tidegate/session/push"
)

// startServer runs a push server with two subscriber loops on ephemeral ports.
func startServer(t *testing.T, mod func(*push.Config)) (srv *push.Server, pub, sub string) {
	t.Helper()
	cfg := push.DefaultConfig()
	cfg.PublishAddr, cfg.SubscribeAddr, cfg.Loops = "tcp://127.0.0.1:0", "tcp://127.0.0.1:0", 2
	mod(&cfg)
	srv, err := push.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	pa, _ := srv.PublishAddr()
	sa, _ := srv.SubscribeAddr()
	return srv, pa.String(), sa.String()
}

func TestRunDeliversEverything(t *testing.T) {
	srv, pa, sa := startServer(t, func(c *push.Config) { c.Window = 20 * time.Millisecond })
	r, err := Run(context.Background(), Config{
		PublishAddr: pa, SubscribeAddr: sa, Subscribers: 20, Topic: "load",
		Rate: 2000, EventsPerFrame: 10, PayloadSize: 64,
		Warmup: 100 * time.Millisecond, Duration: 300 * time.Millisecond, Drain: 2 * time.Second, ClientLoops: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.TotalPublished == 0 || r.TotalDelivered != r.TotalExpected || r.OutOfOrder != 0 || r.Delivered == 0 {
		t.Fatalf("result %s", r)
	}
	if st := srv.Stats(); st.SuccessfulWrites != r.TotalDelivered {
		t.Fatalf("server wrote %d events, clients counted %d", st.SuccessfulWrites, r.TotalDelivered)
	}
}
