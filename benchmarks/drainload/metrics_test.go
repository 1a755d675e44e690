package drainload

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestPausedGaugeReadsTheServersMetrics(t *testing.T) {
	body := "# TYPE tidegate_tlv_paused_connections gauge\ntidegate_tlv_paused_connections 17\ntidegate_tlv_connections 20\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, body)
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	if n, err := pausedGauge(context.Background(), addr); n != 17 || err != nil {
		t.Errorf("pausedGauge = %d, %v; want 17", n, err)
	}
	body = "tidegate_tlv_connections 20\n"
	if _, err := pausedGauge(context.Background(), addr); err == nil || !strings.Contains(err.Error(), "no tidegate_tlv_paused_connections") {
		t.Errorf("pausedGauge without the gauge: %v, want it named missing", err)
	}
}
