package pushload

import (
	"context"
	"testing"
	"time"

	"github.com/tidegate/tidegate/session/push"
)

func TestRunDeliversEverything(t *testing.T) {
	cfg := push.DefaultConfig()
	cfg.PublishAddr, cfg.SubscribeAddr, cfg.Loops = "tcp://127.0.0.1:0", "tcp://127.0.0.1:0", 2
	cfg.Window = 20 * time.Millisecond
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
	r, err := Run(context.Background(), Config{
		PublishAddr: pa.String(), SubscribeAddr: sa.String(), Subscribers: 20, Topic: "load",
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
