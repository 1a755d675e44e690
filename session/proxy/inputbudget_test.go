package proxy

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/reactor/bufferbudget"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
)

// TestFrameLargerThanItsPacketIsRefusedAtOnce: a handshake or Login Start
// frame that declares more than the largest such packet is refused as
// bad_frame as soon as its length arrives, not held until preroute_bytes.
func TestFrameLargerThanItsPacketIsRefusedAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		send []byte
	}{
		{"handshake", append(mc.AppendVarInt(nil, mc.MaxHandshakeBody+1), 0x00)},
		{"login start", append(handshake(mc.Protocol1_20_2, "localhost", mc.NextStateLogin), append(mc.AppendVarInt(nil, mc.MaxLoginStartBody+1), 0x00)...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, addr := startProxy(t, mcConfig(refusedAddr(t), "limits: {handshake_timeout: 30s}"))
			c := dial(t, addr)
			if _, err := c.Write(tc.send); err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(c) // the proxy closes at once: the read ends long before the 30 s timeout
			if err != nil {
				t.Fatalf("want a close, got %v", err)
			}
			if tc.name == "login start" && !bytes.Contains(got, []byte("Protocol error")) {
				t.Fatalf("got %q, want the Protocol error disconnect", got)
			}
			waitStats(t, p, "the bad_frame refusal", func(st proxymetrics.Stats) bool { return st.Rejected["bad_frame"] == 1 })
		})
	}
	// The largest packets the parsers take still fit.
	if n := len(handshake(mc.Protocol1_20_2, string(make([]byte, mc.MaxHandshakeAddressLen)), mc.NextStateLogin)); n > mc.MaxHandshakeBody+3 {
		t.Fatalf("a handshake with the longest address is %d bytes, over the %d waited for", n, mc.MaxHandshakeBody+3)
	}
}

// TestHandshakeInputIsBudgeted: 1,000 connections each holding most of a
// Login Start before routing (the handshake timeout far away) have their
// input counted against limits.buffer_budget: exactly as many as the
// budget holds are kept, the others are refused as buffer_budget (at
// accept, or once their input arrives), and everything counted is given
// back when they close.
func TestHandshakeInputIsBudgeted(t *testing.T) {
	const budget, conns = 2 << 20, 1000
	p, addr := startProxy(t, mcConfig(refusedAddr(t), fmt.Sprintf("loops: 1\nlimits: {handshake_timeout: 2m, buffer_budget: %d}", budget)))
	waitfor.For(t, "no input held or output queued by earlier tests", func() bool {
		return bufferbudget.Held() == 0 && bufferbudget.Queued() == 0
	})
	// A whole handshake, then 3,000 bytes of a Login Start that declares
	// the largest length the proxy waits for: gnet holds them in 4 KiB.
	msg := append(handshake(mc.Protocol1_20_2, "localhost", mc.NextStateLogin), mc.AppendVarInt(nil, mc.MaxLoginStartBody)...)
	msg = append(msg, make([]byte, 3000)...)
	each := bufferbudget.InputFootprint(len(msg))
	fit := budget / each
	open := func(n int) []net.Conn {
		cs := make([]net.Conn, n)
		for i := range cs {
			cs[i] = dial(t, addr)
			if _, err := cs[i].Write(msg); err != nil {
				t.Fatal(err)
			}
		}
		return cs
	}
	first := open(fit - 10)
	waitfor.For(t, fmt.Sprintf("%d sessions' input accounted, %d bytes each", len(first), each), func() bool {
		return bufferbudget.Held() == int64(len(first)*each)
	})
	if st := p.Stats(); len(st.Rejected) != 0 {
		t.Fatalf("refusals within the budget: %v", st.Rejected)
	}
	rest := open(conns - len(first))
	waitStats(t, p, fmt.Sprintf("%d connections handled, %d over the budget refused", conns, conns-fit), func(st proxymetrics.Stats) bool {
		return st.Accepted == conns && st.Rejected["buffer_budget"] == int64(conns-fit)
	})
	waitfor.For(t, "the refused connections' input given back", func() bool {
		return bufferbudget.Held() == int64(fit*each)
	})
	if st := p.Stats(); st.Active != int64(fit) || len(st.Rejected) != 1 {
		t.Fatalf("%d sessions held, refusals %v; want %d held (the budget's worth) and only buffer_budget", st.Active, st.Rejected, fit)
	}
	for _, c := range append(first, rest...) {
		_ = c.Close()
	}
	waitfor.For(t, "every held byte given back once the clients left", func() bool {
		return bufferbudget.Held() == 0
	})
}
