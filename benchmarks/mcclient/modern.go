package mcclient

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"fmt"
	"net"
	"time"

	"github.com/tidegate/tidegate/protocol/mc"
)

// Packet IDs of protocol 764 (1.20.2) that ModernLogin speaks past Login
// Success.
const (
	configFinish      = 0x02 // both ways in configuration: Finish Configuration, its acknowledgement
	configKeepAlive   = 0x03 // both ways in configuration
	configDisconnect  = 0x01 // clientbound in configuration
	playJoinGame1202  = 0x29 // clientbound Login (play), 764 and 765
	modernLoginBuffer = 64 << 10
)

// ModernOptions says how ModernLogin answers what the server asks.
type ModernOptions struct {
	// VelocitySecret, when set, answers a velocity:player_info Login Plugin
	// Request with player info signed by it, as a proxy would: a client
	// that logs in straight to a backend behind modern forwarding.
	VelocitySecret []byte
}

// ModernSession is a connection ModernLogin brought into play. From the
// byte after the Encryption Response on, when the server sent one (an
// online-mode login), the stream is AES/CFB8 both ways: Encrypt and Decrypt
// are then the ciphers the caller goes on with, nil otherwise.
type ModernSession struct {
	Encrypt, Decrypt *mc.CFB8
	// Left holds the plain bytes that came after Login (play).
	Left []byte
}

// ModernLogin logs name in on c at protocol 764 (1.20.2), within deadline:
// Handshake and Login Start; an Encryption Request answered with a fresh
// shared secret (it does not call a session server's join: the benchmark's
// session server answers every hasJoined); a Login Plugin Request on
// velocity:player_info answered when opts has the secret, any other as not
// understood; Login Success, Login Acknowledged, the configuration state
// (its keep-alives answered) up to Finish Configuration, acknowledged; then
// play up to the server's Login (play), which every server in front of the
// fake backend passes on. Set Compression is refused: the benchmarks
// compress nowhere.
func ModernLogin(c net.Conn, host string, port uint16, name string, opts ModernOptions, deadline time.Time) (ModernSession, error) {
	const v = mc.Protocol1_20_2
	var s ModernSession
	c.SetDeadline(deadline)
	defer c.SetDeadline(time.Time{})
	uuid := mc.OfflineUUID([]byte(name))
	out := mc.AppendHandshake(nil, mc.Handshake{ProtocolVersion: v, Address: []byte(host), Port: port, NextState: mc.NextStateLogin})
	out = appendFramed(out, mc.AppendLoginStart(nil, v, mc.LoginStart{Name: []byte(name), HasUUID: true, UUID: uuid}))
	send := func(b []byte) error {
		if s.Encrypt != nil {
			s.Encrypt.XORKeyStream(b, b)
		}
		if _, err := c.Write(b); err != nil {
			return loginIOError(err)
		}
		return nil
	}
	if err := send(out); err != nil {
		return s, err
	}
	buf := make([]byte, modernLoginBuffer)
	n, pos := 0, 0
	state := "login"
	for {
		frameLen, headerLen, err := mc.SplitFrame(buf[pos:n], len(buf)-mc.MaxFrameHeaderLen)
		if err != nil {
			return s, &LoginError{Reason: "bad_frame", Err: fmt.Errorf("%s: %w", state, err)}
		}
		if frameLen == 0 {
			if pos > 0 {
				n, pos = copy(buf, buf[pos:n]), 0
			}
			if n == len(buf) {
				return s, &LoginError{Reason: "bad_frame", Err: fmt.Errorf("%s frame larger than %d bytes", state, len(buf))}
			}
			m, err := c.Read(buf[n:])
			if m > 0 && s.Decrypt != nil {
				s.Decrypt.XORKeyStream(buf[n:n+m], buf[n:n+m])
			}
			n += m
			if err != nil && m == 0 {
				return s, loginIOError(err)
			}
			continue
		}
		body := buf[pos+headerLen : pos+frameLen]
		pos += frameLen
		id, data, err := mc.ParsePacketID(body)
		if err != nil {
			return s, &LoginError{Reason: "bad_frame", Err: err}
		}
		var reply []byte
		switch {
		case state == "login" && id == mc.PacketEncryptionRequest:
			req, err := mc.ParseEncryptionRequest(body, v)
			if err != nil {
				return s, &LoginError{Reason: "bad_frame", Err: err}
			}
			reply, secret, err := encryptionResponse(req)
			if err != nil {
				return s, &LoginError{Reason: "encryption", Err: err}
			}
			if err := send(reply); err != nil {
				return s, err
			}
			// The response is the last plain byte each way; what came
			// after the request is already encrypted.
			if s.Encrypt, s.Decrypt, err = mc.NewConnCiphers(secret); err != nil {
				return s, &LoginError{Reason: "encryption", Err: err}
			}
			s.Decrypt.XORKeyStream(buf[pos:n], buf[pos:n])
			continue
		case state == "login" && id == mc.PacketLoginPluginRequest:
			pr, err := mc.ParsePluginRequest(body)
			if err != nil {
				return s, &LoginError{Reason: "bad_frame", Err: err}
			}
			resp := mc.PluginResponse{MessageID: pr.MessageID}
			if string(pr.Channel) == mc.VelocityChannel && opts.VelocitySecret != nil {
				resp.Successful = true
				resp.Data = mc.AppendVelocityResponse(nil, opts.VelocitySecret, mc.VelocityInfo{Version: mc.VelocityDefault,
					Address: []byte("127.0.0.1"), UUID: uuid, Name: []byte(name)})
			}
			reply = appendFramed(nil, mc.AppendPluginResponse(nil, resp))
		case state == "login" && id == mc.PacketSetCompression:
			return s, &LoginError{Reason: "unexpected_packet", Err: fmt.Errorf("set compression: this client does not compress")}
		case state == "login" && id == mc.PacketLoginSuccess:
			reply, state = mc.AppendPacket(nil, mc.PacketLoginAcknowledged, nil), "configuration"
		case (state == "login" && id == mc.PacketLoginDisconnect) || (state == "configuration" && id == configDisconnect):
			return s, &LoginError{Reason: "disconnect", Message: disconnectText(data)}
		case state == "login":
			return s, &LoginError{Reason: "unexpected_packet", Err: fmt.Errorf("login packet 0x%02x", id)}
		case state == "configuration" && id == configKeepAlive:
			reply = mc.AppendPacket(nil, configKeepAlive, data)
		case state == "configuration" && id == configFinish:
			reply, state = mc.AppendPacket(nil, configFinish, nil), "play"
		case state == "play" && id == playJoinGame1202:
			s.Left = append([]byte(nil), buf[pos:n]...)
			return s, nil
		}
		if reply != nil {
			if err := send(reply); err != nil {
				return s, err
			}
		}
	}
}

// encryptionResponse returns the Encryption Response frame answering req
// and the plain 16-byte shared secret it carries.
func encryptionResponse(req mc.EncryptionRequest) (frame, secret []byte, err error) {
	key, err := x509.ParsePKIXPublicKey(req.PublicKey)
	if err != nil {
		return nil, nil, fmt.Errorf("the server's public key: %w", err)
	}
	pub, ok := key.(*rsa.PublicKey)
	if !ok {
		return nil, nil, fmt.Errorf("the server's public key is a %T, not RSA", key)
	}
	secret = make([]byte, 16)
	rand.Read(secret)
	encSecret, err := rsa.EncryptPKCS1v15(rand.Reader, pub, secret)
	if err != nil {
		return nil, nil, fmt.Errorf("encrypting the shared secret: %w", err)
	}
	encToken, err := rsa.EncryptPKCS1v15(rand.Reader, pub, req.VerifyToken)
	if err != nil {
		return nil, nil, fmt.Errorf("encrypting the verify token: %w", err)
	}
	return mc.AppendEncryptionResponse(nil, mc.Protocol1_20_2, mc.EncryptionResponse{SharedSecret: encSecret, VerifyToken: encToken}), secret, nil
}

// appendFramed appends body (packet ID and data) as an uncompressed frame.
func appendFramed(dst, body []byte) []byte {
	return append(mc.AppendVarInt(dst, int32(len(body))), body...)
}
