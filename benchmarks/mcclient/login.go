package mcclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/tidegate/tidegate/protocol/mc"
)

// LoginProtocol is the protocol version the clients log in with: 1.7.10,
// whose offline login is Handshake, Login Start and Login Success, straight
// into play.
const LoginProtocol = mc.Protocol1_7_10

// LoginError is a login that did not reach play.
type LoginError struct {
	// Reason is a short stable label: "disconnect" (the server sent a login
	// Disconnect), "closed" (the connection ended), "timeout",
	// "bad_frame" or "unexpected_packet".
	Reason string
	// Message is the text of a Disconnect, when one came.
	Message string
	Err     error
}

// Error implements the error interface.
func (e *LoginError) Error() string {
	s := "login: " + e.Reason
	if e.Message != "" {
		s += ": " + strconv.Quote(e.Message)
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying error.
func (e *LoginError) Unwrap() error { return e.Err }

// AppendLogin appends the Handshake (next state login, protocol 5) and Login
// Start frames for name to dst.
func AppendLogin(dst []byte, host string, port uint16, name string) []byte {
	dst = mc.AppendHandshake(dst, mc.Handshake{
		ProtocolVersion: LoginProtocol, Address: []byte(host), Port: port, NextState: mc.NextStateLogin,
	})
	return mc.AppendPacket(dst, mc.PacketLoginStart, mc.AppendString(nil, []byte(name)))
}

// DialLogin connects to addr (within 5 s) and logs in as name with the
// handshake's server address host:port (within 10 s). It returns the
// connection and the bytes that came after Login Success; errors name the
// connection as what ("conn 3", "session 3").
func DialLogin(ctx context.Context, addr, host string, port uint16, what, name string) (net.Conn, []byte, error) {
	d := net.Dialer{Timeout: 5 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: connecting to %s: %w", what, addr, err)
	}
	left, err := Login(nc, host, port, name, nil, time.Now().Add(10*time.Second))
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("%s via %s: %w", what, addr, err)
	}
	return nc, left, nil
}

// Login sends the Handshake and Login Start for name on c and reads until
// Login Success. buf is scratch for the replies; the bytes that came after
// Login Success (the start of play) are returned in a slice of buf.
// deadline bounds the whole exchange (zero: none); it is cleared on return.
func Login(c net.Conn, host string, port uint16, name string, buf []byte, deadline time.Time) ([]byte, error) {
	if len(name) == 0 || len(name) > mc.MaxUsernameLen {
		return nil, fmt.Errorf("login: username %q: want 1..%d bytes", name, mc.MaxUsernameLen)
	}
	if len(buf) < 512 {
		buf = make([]byte, 4096)
	}
	if !deadline.IsZero() {
		c.SetDeadline(deadline)
		defer c.SetDeadline(time.Time{})
	}
	if _, err := c.Write(AppendLogin(nil, host, port, name)); err != nil {
		return nil, loginIOError(err)
	}
	n := 0
	for {
		for {
			frameLen, headerLen, err := mc.SplitFrame(buf[:n], len(buf)-mc.MaxFrameHeaderLen)
			if err != nil {
				return nil, &LoginError{Reason: "bad_frame", Err: err}
			}
			if frameLen == 0 {
				break
			}
			id, data, err := mc.ParsePacketID(buf[headerLen:frameLen])
			if err != nil {
				return nil, &LoginError{Reason: "bad_frame", Err: err}
			}
			switch id {
			case mc.PacketLoginSuccess:
				return buf[frameLen:n], nil
			case mc.PacketLoginDisconnect:
				return nil, &LoginError{Reason: "disconnect", Message: disconnectText(data)}
			default:
				return nil, &LoginError{Reason: "unexpected_packet",
					Err: fmt.Errorf("login packet 0x%02x (compression and encryption are not spoken by this client)", id)}
			}
		}
		if n == len(buf) {
			return nil, &LoginError{Reason: "bad_frame", Err: fmt.Errorf("login reply larger than %d bytes", len(buf))}
		}
		m, err := c.Read(buf[n:])
		n += m
		if err != nil && m == 0 {
			return nil, loginIOError(err)
		}
	}
}

func loginIOError(err error) error {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return &LoginError{Reason: "timeout", Err: err}
	case errors.Is(err, io.EOF):
		return &LoginError{Reason: "closed", Err: err}
	}
	return &LoginError{Reason: "closed", Err: err}
}

// disconnectText reads the text of a login Disconnect's JSON component,
// falling back to the raw JSON.
func disconnectText(data []byte) string {
	r := mc.NewReader(data)
	s, err := r.ReadString(32 << 10)
	if err != nil {
		return "(malformed disconnect)"
	}
	var comp struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(s, &comp) == nil && comp.Text != "" {
		return comp.Text
	}
	return string(s)
}

// SplitHostPort splits addr into the host and port a Handshake carries.
func SplitHostPort(addr string) (string, uint16, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("address %q: %w", addr, err)
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("address %q: port: %w", addr, err)
	}
	return host, uint16(port), nil
}
