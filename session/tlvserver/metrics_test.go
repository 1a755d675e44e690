package tlvserver

import (
	"strings"
	"testing"

	"github.com/tidegate/tidegate/protocol/tlv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestPrometheusCollector(t *testing.T) {
	s := startServer(t, Config{})
	c := dial(t, s)
	f := tlv.DefaultFormat
	msg := f.AppendFrame(nil, tlv.Header{Type: 1, KeepAlive: true}, []byte("one"))
	msg = f.AppendFrame(msg, tlv.Header{Type: 2}, []byte("two"))
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	readFrame(t, c, f)
	readFrame(t, c, f)
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(NewCollector(s)); err != nil {
		t.Fatal(err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP tidegate_tlv_requests_total Requests answered.
# TYPE tidegate_tlv_requests_total counter
tidegate_tlv_requests_total 2
# HELP tidegate_tlv_accepted_total Connections accepted.
# TYPE tidegate_tlv_accepted_total counter
tidegate_tlv_accepted_total 1
# HELP tidegate_tlv_closes_total Connections the server closed, by reason (keep_alive: a request without the keep-alive bit; idle_timeout; unframable_response: the handler answered with a response the format cannot carry).
# TYPE tidegate_tlv_closes_total counter
tidegate_tlv_closes_total{reason="idle_timeout"} 0
tidegate_tlv_closes_total{reason="keep_alive"} 1
tidegate_tlv_closes_total{reason="unframable_response"} 0
`), "tidegate_tlv_requests_total", "tidegate_tlv_accepted_total", "tidegate_tlv_closes_total"); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 12 {
		t.Fatalf("gathered %d metrics, %v; want 12", n, err)
	}
}
