package clusterload

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestScrapeSumsTheFallbacksOfEveryReason(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "# HELP tidegate_cluster_redis_roundtrips_total round trips\n"+
			"tidegate_cluster_redis_roundtrips_total 42\n"+
			"tidegate_cluster_fallbacks_total{reason=\"timeout\"} 3\n"+
			"tidegate_cluster_fallbacks_total{reason=\"error\"} 2\n"+
			"tidegate_proxy_sessions 9\n")
	}))
	defer srv.Close()
	rt, fb, err := scrape(context.Background(), strings.TrimPrefix(srv.URL, "http://"))
	if rt != 42 || fb != 5 || err != nil {
		t.Errorf("scrape = %d round trips, %d fallbacks, %v; want 42 and 5", rt, fb, err)
	}
}
