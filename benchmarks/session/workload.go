package session

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tidegate/tidegate/protocol/mc"
)

// Params is one workload: what every connection of a phase does.
type Params struct {
	// Connections is the number of clients, each on its own connection.
	Connections int `json:"connections"`
	// Messages is the number of measured roundtrips (PLAY packets sent and
	// echoed) per connection.
	Messages int `json:"messages"`
	// Warmup is the number of roundtrips per connection before timing starts.
	Warmup int `json:"warmup"`
	// Payload is the PLAY packet body in bytes: packet ID, connection
	// number, sequence number and filler (at least MinPayload).
	Payload int `json:"payload"`
	// Window is the number of bursts in flight per connection.
	Window int `json:"window"`
	// Burst is the number of packets written back to back as one burst.
	Burst int `json:"burst"`
}

// Limits of Params.
const (
	// MinPayload is the smallest body: packet ID (1 byte), connection and
	// sequence numbers (4 bytes each).
	MinPayload     = 9
	maxConnections = 4096
	// maxInFlightBytes bounds window × burst × frame size: a connection's
	// goroutine writes a whole burst before it reads again, so what is in
	// flight must fit the socket buffers along the path.
	maxInFlightBytes = 1 << 20
)

// Presets are the documented workloads (MoonBridge's 2026-10-22 relay report
// and its 2026-09-25 session report).
var Presets = map[string]Params{
	// 4 bursts of 32 × 32 B in flight: 128 packets per connection.
	"burst32": {Connections: 4, Messages: 6000, Warmup: 600, Payload: 32, Window: 4, Burst: 32},
	"w1":      {Connections: 4, Messages: 5000, Warmup: 500, Payload: 1024, Window: 1, Burst: 1},
	"w16":     {Connections: 4, Messages: 5000, Warmup: 500, Payload: 1024, Window: 16, Burst: 1},
	"seed001": {Connections: 4, Messages: 10000, Warmup: 1000, Payload: 4096, Window: 16, Burst: 1},
}

// PresetNames returns the preset names, sorted.
func PresetNames() []string {
	names := make([]string, 0, len(Presets))
	for n := range Presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Preset returns the named preset.
func Preset(name string) (Params, error) {
	p, ok := Presets[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return Params{}, fmt.Errorf("workload %q: want one of %s", name, strings.Join(PresetNames(), ", "))
	}
	return p, nil
}

// FrameLen returns the bytes of one PLAY frame: length prefix and body.
func (p Params) FrameLen() int { return mc.VarIntLen(int32(p.Payload)) + p.Payload }

// Validate reports every value that cannot work.
func (p Params) Validate() error {
	var errs []string
	bad := func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) }
	if p.Connections < 1 || p.Connections > maxConnections {
		bad("connections %d: want 1..%d", p.Connections, maxConnections)
	}
	if p.Messages < 1 {
		bad("messages %d: want at least 1", p.Messages)
	}
	if p.Warmup < 0 {
		bad("warmup %d is negative", p.Warmup)
	}
	if int64(p.Messages)+int64(p.Warmup) > 1<<31 {
		bad("messages+warmup %d exceeds the 32-bit sequence number", int64(p.Messages)+int64(p.Warmup))
	}
	if p.Payload < MinPayload || p.Payload > mc.MaxFrameLength {
		bad("payload %d: want %d..%d bytes", p.Payload, MinPayload, mc.MaxFrameLength)
	}
	if p.Window < 1 {
		bad("window %d: want at least 1", p.Window)
	}
	if p.Burst < 1 {
		bad("burst %d: want at least 1", p.Burst)
	}
	if len(errs) == 0 {
		if n := int64(p.Window) * int64(p.Burst) * int64(p.FrameLen()); n > maxInFlightBytes {
			bad("window %d × burst %d × %d-byte frames = %d bytes in flight per connection: keep it within %d",
				p.Window, p.Burst, p.FrameLen(), n, maxInFlightBytes)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("workload: %s", strings.Join(errs, "; "))
	}
	return nil
}

// String formats p as the flags that select it.
func (p Params) String() string {
	return fmt.Sprintf("--connections %d --messages %d --warmup %d --payload %d --window %d --burst %d",
		p.Connections, p.Messages, p.Warmup, p.Payload, p.Window, p.Burst)
}

// WorkloadPlayers names the players workload (package players) on the
// command line and in results.
const WorkloadPlayers = "players"

// defaultStallTimeout is how long a phase may make no progress.
const defaultStallTimeout = 20 * time.Second
