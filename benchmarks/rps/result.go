package rps

import (
	"fmt"
	"io"
	"strconv"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/tidegate/tidegate/benchmarks/harness"
)

// Result is the outcome of one measured run.
type Result struct {
	Clients     int `json:"clients"`
	Payloads    int `json:"payloads_per_client"`
	PayloadSize int `json:"payload_size"`
	Pipeline    int `json:"pipeline"`

	// Requests is every request the run accounted for: Clients × Payloads =
	// Successes + Errors + Timeouts.
	Requests  int64 `json:"requests"`
	Successes int64 `json:"successes"`
	// Errors are responses that did not match their request (type,
	// keep-alive bit, length or content), error frames, and requests lost
	// with a connection that broke or could not be made.
	Errors int64 `json:"errors"`
	// Timeouts are requests still in flight on a connection whose oldest
	// request waited longer than the timeout.
	Timeouts   int64 `json:"timeouts"`
	Reconnects int64 `json:"reconnects"`

	// WallSeconds runs from the first request to the last client's last
	// response.
	WallSeconds float64 `json:"wall_seconds"`
	// RPS is Successes / WallSeconds.
	RPS float64 `json:"rps"`

	// Latencies of successful requests, from send to whole response, in ms.
	AvgMs float64 `json:"avg_ms"`
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`

	// PerClientRPS spreads each client's successes per second of its own
	// run time.
	PerClientRPS harness.Spread `json:"per_client_rps"`

	// ClientCPUSeconds is the CPU time this process used during the run
	// (including an in-process server).
	ClientCPUSeconds float64 `json:"client_cpu_seconds"`
}

// Failure returns why the run does not count, or nil: any request that
// errored (a wrong, lost, duplicated or reordered response, an error frame,
// a broken connection) or timed out, or fewer requests accounted for than
// the run made.
func (r Result) Failure() error {
	want := int64(r.Clients) * int64(r.Payloads)
	if r.Errors == 0 && r.Timeouts == 0 && r.Successes == want && r.Requests == want {
		return nil
	}
	return fmt.Errorf("%d errors and %d timeouts; %d of %d requests succeeded", r.Errors, r.Timeouts, r.Successes, want)
}

// result sums the run's clients and histograms.
func (r *run) result() Result {
	cfg := r.g.cfg
	res := Result{Clients: cfg.Clients, Payloads: cfg.Payloads, PayloadSize: cfg.PayloadSize, Pipeline: cfg.Pipeline}
	hist := hdrhistogram.New(1, maxLatencyMicros, 3)
	for _, h := range r.hists {
		hist.Merge(h)
	}
	perClient := make([]float64, 0, len(r.clients))
	var wall int64
	for _, cs := range r.clients {
		res.Successes += cs.successes
		res.Errors += cs.errors
		res.Timeouts += cs.timeouts
		res.Reconnects += cs.reconnects
		res.Requests += int64(cs.completed)
		wall = max(wall, cs.finishedAt)
		if cs.finishedAt > 0 {
			perClient = append(perClient, float64(cs.successes)/(float64(cs.finishedAt)/1e9))
		}
	}
	res.WallSeconds = float64(wall) / 1e9
	if wall > 0 {
		res.RPS = float64(res.Successes) / res.WallSeconds
	}
	if hist.TotalCount() > 0 {
		res.AvgMs = hist.Mean() / 1000
		res.P50Ms = float64(hist.ValueAtQuantile(50)) / 1000
		res.P99Ms = float64(hist.ValueAtQuantile(99)) / 1000
		res.MaxMs = float64(hist.Max()) / 1000
	}
	res.PerClientRPS = harness.Of(perClient)
	return res
}

// WriteTable prints results as an aligned table, one row each.
func WriteTable(w io.Writer, rows ...Result) error {
	cells := make([][]string, 0, len(rows))
	for _, r := range rows {
		cells = append(cells, []string{strconv.Itoa(r.Clients), strconv.Itoa(r.Pipeline), strconv.Itoa(r.PayloadSize),
			strconv.FormatInt(r.Requests, 10), harness.Fixed(r.RPS, 0), harness.Fixed(r.AvgMs, 4), harness.Fixed(r.P50Ms, 4),
			harness.Fixed(r.P99Ms, 4), strconv.FormatInt(r.Errors, 10), strconv.FormatInt(r.Timeouts, 10), perClient(r)})
	}
	return harness.TextTable{Right: true, Closed: true}.Write(w, []string{"clients", "pipeline", "size", "requests", "RPS",
		"avg ms", "p50 ms", "p99 ms", "errors", "timeouts", "per-client calls/s min/med/max"}, cells)
}

// perClient writes the spread of the clients' own call rates.
func perClient(r Result) string {
	return fmt.Sprintf("%.0f / %.0f / %.0f", r.PerClientRPS.Min, r.PerClientRPS.Median, r.PerClientRPS.Max)
}
