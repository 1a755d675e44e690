package mc

import (
	"errors"
	"strconv"
)

// Reasons carried by [ProtocolError.Reason]. They are stable, short and
// lower-case so that they can be used directly as metrics labels.
const (
	ReasonVarIntTooLong     = "varint_too_long"     // a VarInt ran past its byte limit
	ReasonFrameTooLarge     = "frame_too_large"     // a frame length exceeded the maximum
	ReasonTruncated         = "truncated"           // a packet body ended inside a field
	ReasonStringTooLong     = "string_too_long"     // a string exceeded its byte limit
	ReasonNegativeLength    = "negative_length"     // a length field was negative
	ReasonBadHandshake      = "bad_handshake"       // a handshake packet was malformed
	ReasonBadNextState      = "bad_next_state"      // a handshake asked for an unknown state
	ReasonBadLoginStart     = "bad_login_start"     // a login start packet was malformed
	ReasonBadPing           = "bad_ping"            // a status ping packet was malformed
	ReasonBadSetCompression = "bad_set_compression" // a set compression packet was malformed
	ReasonBadCompression    = "bad_compression"     // a compressed frame header was malformed
	ReasonNotLegacyPing     = "not_legacy_ping"     // input starting with 0xFE that is not a legacy ping
	ReasonBadLegacyPing     = "bad_legacy_ping"     // a 1.6 legacy ping (or a legacy kick) was malformed
	ReasonBadStatusJSON     = "bad_status_json"     // a status response's JSON was malformed
	ReasonBadChat           = "bad_chat"            // a chat component was malformed
	ReasonBadUsername       = "bad_username"        // a login start name a UsernamePolicy refuses
	ReasonBadLoginSuccess   = "bad_login_success"   // a login success packet was malformed
	ReasonBadPluginMessage  = "bad_plugin_message"  // a login plugin request or response was malformed
	ReasonBadDisconnect     = "bad_disconnect"      // a login disconnect packet was malformed
	ReasonInflateTooLarge   = "inflate_too_large"   // a compressed frame inflates past its limit
	ReasonBadInflate        = "bad_inflate"         // a compressed frame's zlib stream is corrupt or not its declared size
	ReasonBadForwarding     = "bad_forwarding"      // modern forwarding data was malformed or its signature wrong
)

// ProtocolError describes malformed protocol data. Reason is a stable label
// (one of the Reason constants); the other fields say what failed and with
// what value. errors.Is reports a match between two ProtocolErrors with the
// same Reason, so the Err variables below work as sentinels:
//
//	if errors.Is(err, mc.ErrFrameTooLarge) { ... }
//
// and errors.As gives access to the details:
//
//	var pe *mc.ProtocolError
//	if errors.As(err, &pe) { metrics.Inc(pe.Reason) }
type ProtocolError struct {
	Reason string // stable label, e.g. "frame_too_large"
	Packet string // packet being decoded, e.g. "handshake"; empty for framing
	Field  string // what was wrong, e.g. "frame length"
	Value  int64  // the offending value, if any
	Limit  int64  // the bound Value was checked against, if any

	kind errKind
}

type errKind uint8

const (
	kindSentinel   errKind = iota // Error() is "mc: " + Field
	kindTooLarge                  // Value exceeds Limit
	kindTooSmall                  // Value is below Limit
	kindTooLong                   // encoding longer than Limit bytes
	kindTruncated                 // need Limit bytes, have Value
	kindUnexpected                // Value where Limit was required
	kindInvalid                   // Value is not acceptable
	kindTrailing                  // Value bytes left over
)

// Error returns a message such as
// "mc: frame length 3000000 exceeds maximum 2097151".
func (e *ProtocolError) Error() string {
	b := make([]byte, 0, 96)
	b = append(b, "mc: "...)
	if e.Packet != "" {
		b = append(b, e.Packet...)
		b = append(b, ": "...)
	}
	switch e.kind {
	case kindSentinel:
		b = append(b, e.Field...)
	case kindTooLarge:
		b = append(b, e.Field...)
		b = append(b, ' ')
		b = strconv.AppendInt(b, e.Value, 10)
		b = append(b, " exceeds maximum "...)
		b = strconv.AppendInt(b, e.Limit, 10)
	case kindTooSmall:
		b = append(b, e.Field...)
		b = append(b, ' ')
		b = strconv.AppendInt(b, e.Value, 10)
		b = append(b, " is below minimum "...)
		b = strconv.AppendInt(b, e.Limit, 10)
	case kindTooLong:
		b = append(b, e.Field...)
		b = append(b, " longer than "...)
		b = strconv.AppendInt(b, e.Limit, 10)
		b = append(b, " bytes"...)
	case kindTruncated:
		b = append(b, "truncated "...)
		b = append(b, e.Field...)
		b = append(b, ": need "...)
		b = strconv.AppendInt(b, e.Limit, 10)
		b = append(b, " bytes, have "...)
		b = strconv.AppendInt(b, e.Value, 10)
	case kindUnexpected:
		b = append(b, "unexpected "...)
		b = append(b, e.Field...)
		b = append(b, " 0x"...)
		b = strconv.AppendInt(b, e.Value, 16)
		b = append(b, ", want 0x"...)
		b = strconv.AppendInt(b, e.Limit, 16)
	case kindInvalid:
		b = append(b, "invalid "...)
		b = append(b, e.Field...)
		b = append(b, ' ')
		b = strconv.AppendInt(b, e.Value, 10)
	case kindTrailing:
		b = strconv.AppendInt(b, e.Value, 10)
		b = append(b, " trailing bytes after "...)
		b = append(b, e.Field...)
	}
	return string(b)
}

// Is reports whether target is a *ProtocolError with the same Reason.
func (e *ProtocolError) Is(target error) bool {
	t, ok := target.(*ProtocolError)
	return ok && t.Reason == e.Reason
}

// Sentinel errors, one per Reason, for use with errors.Is. Functions in this
// package return either these values or a *ProtocolError with the same Reason
// and more detail.
var (
	ErrVarIntTooLong     = sentinel(ReasonVarIntTooLong, "varint too long")
	ErrFrameTooLarge     = sentinel(ReasonFrameTooLarge, "frame too large")
	ErrTruncated         = sentinel(ReasonTruncated, "truncated packet")
	ErrStringTooLong     = sentinel(ReasonStringTooLong, "string too long")
	ErrNegativeLength    = sentinel(ReasonNegativeLength, "negative length")
	ErrBadHandshake      = sentinel(ReasonBadHandshake, "bad handshake")
	ErrBadNextState      = sentinel(ReasonBadNextState, "bad handshake next state")
	ErrBadLoginStart     = sentinel(ReasonBadLoginStart, "bad login start")
	ErrBadPing           = sentinel(ReasonBadPing, "bad ping")
	ErrBadSetCompression = sentinel(ReasonBadSetCompression, "bad set compression")
	ErrBadCompression    = sentinel(ReasonBadCompression, "bad compressed frame header")
	ErrNotLegacyPing     = sentinel(ReasonNotLegacyPing, "not a legacy ping")
	ErrBadLegacyPing     = sentinel(ReasonBadLegacyPing, "bad legacy ping")
	ErrBadStatusJSON     = sentinel(ReasonBadStatusJSON, "bad status JSON")
	ErrBadChat           = sentinel(ReasonBadChat, "bad chat component")
	ErrBadUsername       = sentinel(ReasonBadUsername, "bad username")
	ErrBadLoginSuccess   = sentinel(ReasonBadLoginSuccess, "bad login success")
	ErrBadPluginMessage  = sentinel(ReasonBadPluginMessage, "bad login plugin message")
	ErrBadDisconnect     = sentinel(ReasonBadDisconnect, "bad login disconnect")
	ErrInflateTooLarge   = sentinel(ReasonInflateTooLarge, "compressed frame inflates past its limit")
	ErrBadInflate        = sentinel(ReasonBadInflate, "bad zlib stream")
	ErrBadForwarding     = sentinel(ReasonBadForwarding, "bad modern forwarding data")
)

func sentinel(reason, text string) *ProtocolError {
	return &ProtocolError{Reason: reason, Field: text, kind: kindSentinel}
}

func newError(reason string, kind errKind, field string, value, limit int64) *ProtocolError {
	return &ProtocolError{Reason: reason, Field: field, Value: value, Limit: limit, kind: kind}
}

func packetError(packet, reason string, kind errKind, field string, value, limit int64) *ProtocolError {
	return &ProtocolError{Reason: reason, Packet: packet, Field: field, Value: value, Limit: limit, kind: kind}
}

// relabel attributes err, produced while decoding packet, to that packet with
// the given reason. Errors created by this package are updated in place;
// sentinels are copied first.
func relabel(err error, packet, reason string) error {
	pe, ok := err.(*ProtocolError)
	if !ok {
		return err
	}
	if pe.kind == kindSentinel {
		c := *pe
		pe = &c
	}
	pe.Packet = packet
	pe.Reason = reason
	return pe
}

// ErrorReason returns the Reason of the first *ProtocolError in err's chain,
// "" when err is nil, and "other" for errors not produced by this package.
func ErrorReason(err error) string {
	if err == nil {
		return ""
	}
	if pe, ok := err.(*ProtocolError); ok {
		return pe.Reason
	}
	var pe *ProtocolError
	if errors.As(err, &pe) {
		return pe.Reason
	}
	return "other"
}
