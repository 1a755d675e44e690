package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/proxy/config"
)

// probeProtocol is the protocol version a status exchange announces: -1 by
// convention for a ping that does not know the server's version.
const probeProtocol = -1

// Backend is a backend that is up, as FetchGroup picks among them.
type Backend struct {
	Addr   string
	Weight int
}

// FetchGroup asks the backends of group name that are up for their
// status: one, picked by weight (the others in turn if it fails), or with
// st.SumOnline all of them at once, players.online becoming their sum.
//
// With net (the network's players; nil without a cluster) those replace
// the backend's, and one backend is asked even with st.SumOnline.
func FetchGroup(ctx context.Context, st config.StatusConfig, name string, up []Backend, net *Players) (*Reply, error) {
	total := 0
	for _, b := range up {
		total += b.Weight
	}
	if len(up) == 0 {
		return nil, fmt.Errorf("no backend of group %s is up", name)
	}
	if !st.SumOnline || (net != nil && net.Online >= 0) {
		pl := Players{Online: -1}
		if net != nil {
			pl = *net
		}
		first, n := 0, rand.IntN(total)
		for i, b := range up {
			if n < b.Weight {
				first = i
				break
			}
			n -= b.Weight
		}
		var errs []error
		for i := range up {
			addr := up[(first+i)%len(up)].Addr
			js, err := Fetch(ctx, addr, st.Timeout)
			if err == nil {
				var r *Reply
				if r, err = FromBackend(js, pl, st.Protocol); err == nil {
					return r, nil
				}
				err = fmt.Errorf("status of %s: %w", addr, err)
			}
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
		}
		return nil, errors.Join(errs...)
	}
	type result struct {
		js     []byte
		online int64
		err    error
	}
	res := make([]result, len(up))
	var wg sync.WaitGroup
	for i, b := range up {
		wg.Add(1)
		go func() {
			defer wg.Done()
			js, err := Fetch(ctx, b.Addr, st.Timeout)
			if err != nil {
				res[i].err = err
				return
			}
			info, err := mc.ParseStatusJSON(js)
			if err != nil {
				res[i].err = fmt.Errorf("status of %s: %w", b.Addr, err)
				return
			}
			res[i] = result{js: js, online: info.Online}
		}()
	}
	wg.Wait()
	var errs []error
	primary, sum := -1, int64(0)
	for i, r := range res {
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		sum += r.online
		if primary < 0 {
			primary = i
		}
	}
	if primary < 0 {
		return nil, errors.Join(errs...)
	}
	pl := Players{Online: sum}
	if net != nil {
		pl.Sample = net.Sample
	}
	return FromBackend(res[primary].js, pl, st.Protocol)
}

// Fetch does a status exchange with the backend at addr within timeout
// and returns its JSON.
func Fetch(ctx context.Context, addr string, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		if strings.Contains(err.Error(), addr) { // "dial tcp ADDR: ..." names it
			return nil, fmt.Errorf("status: %w", err)
		}
		return nil, fmt.Errorf("status of %s: %w", addr, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() }) // Proxy.Stop need not wait for the timeout
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	js, err := Exchange(conn, addr)
	if err != nil {
		return nil, fmt.Errorf("status of %s: %w", addr, err)
	}
	return js, nil
}

// Exchange sends a status handshake and Status Request on conn, which is
// connected to addr (host:port, named in the handshake), and reads a Status
// Response carrying JSON, which it returns.
func Exchange(conn net.Conn, addr string) ([]byte, error) {
	host, portText, _ := net.SplitHostPort(addr) // validated by config.Parse
	port, _ := strconv.ParseUint(portText, 10, 16)
	req := mc.AppendHandshake(nil, mc.Handshake{
		ProtocolVersion: probeProtocol, Address: []byte(host), Port: uint16(port), NextState: mc.NextStateStatus,
	})
	req = mc.AppendPacket(req, mc.PacketStatusRequest, nil)
	if _, err := conn.Write(req); err != nil {
		return nil, fmt.Errorf("sending status request: %w", err)
	}
	body, err := readFrame(conn, make([]byte, 0, 1024))
	if err != nil {
		return nil, fmt.Errorf("reading status response: %w", err)
	}
	id, data, err := mc.ParsePacketID(body)
	if err != nil {
		return nil, fmt.Errorf("status response: %w", err)
	}
	if id != mc.PacketStatusResponse {
		return nil, fmt.Errorf("got packet 0x%02x, want Status Response 0x%02x", id, mc.PacketStatusResponse)
	}
	rd := mc.NewReader(data)
	js, err := rd.ReadString(mc.MaxFrameLength)
	if err != nil {
		return nil, fmt.Errorf("status response: %w", err)
	}
	if !json.Valid(js) {
		return nil, fmt.Errorf("status response of %d bytes is not JSON", len(js))
	}
	return js, nil
}

// readFrame reads from conn until buf holds one whole frame and returns
// its body (packet ID and data).
func readFrame(conn net.Conn, buf []byte) ([]byte, error) {
	var readErr error
	for {
		n, hl, err := mc.SplitFrame(buf, mc.MaxFrameLength)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			return buf[hl:n], nil
		}
		if errors.Is(readErr, io.EOF) {
			return nil, fmt.Errorf("connection closed after %d bytes, inside the first frame", len(buf))
		}
		if readErr != nil {
			return nil, readErr
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		var m int
		m, readErr = conn.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
	}
}
