package lifecycle

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/reactor/handoverwire"
	"github.com/tidegate/tidegate/session/proxy"
	"github.com/tidegate/tidegate/session/proxy/handover"
)

// A live upgrade (SIGUSR2 to a running proxy): the old process starts the
// binary found at the path it was started from, with the same arguments,
// and gives it, over a Unix socket on descriptor 3, its listening sockets
// (the proxy's and the metrics one). The new process starts on them and
// says it is ready; then the old one stops accepting and hands over every
// session as it reaches the relay state (session/proxy/upgrade.go), and
// exits 0 once none is left. If the new process fails before it is ready,
// the old one goes on as before. This file is the new process's side;
// upgrade.go the old one's.

// UpgradeFDEnv names the descriptor of the hand-over socket in a process
// started by a live upgrade.
const UpgradeFDEnv = "TIDEGATE_UPGRADE_FD"

// upgradeListeners is the first message: the names of the listening
// sockets that come with it, in order.
type upgradeListeners struct {
	Names []string `json:"names"`
}

// upgradeReady is the new process's answer once it serves.
type upgradeReady struct {
	PID int `json:"pid"`
	// Acks: this process acknowledges the sessions it takes (an older one
	// did not, and the old process must not wait for it to).
	Acks bool `json:"acks,omitempty"`
	// AcksEach: it acknowledges each session by its place before it uses
	// its sockets, so the old process may keep its copies until then and
	// take back what this one does not adopt (proxy.HandOverOptions.AckEach).
	AcksEach bool `json:"acks_each,omitempty"`
	// StateVersion is the newest session state message it reads (0: 1):
	// from 2 on, the old process sends it the sessions whose login it
	// completed, ciphers and all (proxy.HandOverOptions.StateVersion).
	StateVersion int `json:"state_version,omitempty"`
}

// proxyListenerName is the hand-over name of the proxy's listener
// configured with address addr: the new process matches its own listeners
// by it.
func proxyListenerName(addr string) string { return "proxy/" + addr }

// metricsListenerName is the hand-over name of the metrics listener.
const metricsListenerName = "metrics"

// Inheritance is what a process started by a live upgrade got from the old
// one: the hand-over socket, and the listening sockets by name.
type Inheritance struct {
	hc        *handoverwire.Conn
	listeners map[string]net.Listener
}

// TakeInheritance reads the listening sockets handed over when this process
// was started by a live upgrade ($TIDEGATE_UPGRADE_FD set); it returns nil
// otherwise.
func TakeInheritance() (*Inheritance, error) {
	v := os.Getenv(UpgradeFDEnv)
	if v == "" {
		return nil, nil
	}
	_ = os.Unsetenv(UpgradeFDEnv) // not for a later upgrade of this process
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("%s=%q: want a descriptor number of 3 or more", UpgradeFDEnv, v)
	}
	f := os.NewFile(uintptr(fd), "upgrade")
	hc, err := handoverwire.FromFile(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	data, files, err := hc.Recv()
	if err != nil {
		hc.Close()
		return nil, fmt.Errorf("upgrade: reading the listeners from the old process: %w", err)
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	var msg upgradeListeners
	if err := json.Unmarshal(data, &msg); err != nil || len(msg.Names) != len(files) {
		hc.Close()
		return nil, fmt.Errorf("upgrade: the old process sent %d listener names and %d sockets (%v)", len(msg.Names), len(files), err)
	}
	in := &Inheritance{hc: hc, listeners: map[string]net.Listener{}}
	for i, name := range msg.Names {
		ln, err := net.FileListener(files[i])
		if err != nil {
			in.Close()
			return nil, fmt.Errorf("upgrade: listener %s: %w", name, err)
		}
		in.listeners[name] = ln
	}
	return in, nil
}

// ProxyListeners takes the inherited socket of each of the proxy's
// listeners, matched by its configured address (nil where none came). A
// nil Inheritance has none.
func (in *Inheritance) ProxyListeners(addrs []string) []net.Listener {
	if in == nil {
		return nil
	}
	out := make([]net.Listener, len(addrs))
	for i, addr := range addrs {
		out[i] = in.listeners[proxyListenerName(addr)]
		delete(in.listeners, proxyListenerName(addr))
	}
	return out
}

// MetricsListener takes the inherited metrics listener, nil if none came.
func (in *Inheritance) MetricsListener() net.Listener {
	if in == nil {
		return nil
	}
	ln := in.listeners[metricsListenerName]
	delete(in.listeners, metricsListenerName)
	return ln
}

// Close closes what was not taken, and the hand-over socket.
func (in *Inheritance) Close() {
	for _, ln := range in.listeners {
		ln.Close()
	}
	in.hc.Close()
}

// TakeOver tells the old process this one is ready and takes over its
// sessions into p in the background. Listeners the old process sent and
// nothing here took are closed.
func (in *Inheritance) TakeOver(log zerolog.Logger, p *proxy.Proxy) error {
	for name, ln := range in.listeners { // sent but not configured here
		log.Warn().Str("listener", name).Msg("upgrade: the old process had a listener this configuration does not: closed")
		ln.Close()
	}
	data, _ := json.Marshal(upgradeReady{PID: os.Getpid(), Acks: true, AcksEach: true, StateVersion: handover.StateVersion})
	if err := in.hc.Send(data); err != nil {
		in.hc.Close()
		return fmt.Errorf("upgrade: telling the old process we are ready: %w", err)
	}
	go func() {
		start := time.Now()
		n, err := p.TakeOver(in.hc)
		in.hc.Close()
		ev := log.Info()
		if err != nil {
			ev = log.Error().Err(err)
		}
		ev.Int("sessions", n).Dur("took", time.Since(start)).Msg("upgrade: took over the old process's sessions")
	}()
	return nil
}
