package proxyproto

import (
	"errors"
	"fmt"
)

// Reasons carried by [Error.Reason]: stable, short and lower-case, to be
// used as metrics labels or log fields.
const (
	ReasonNotProxy       = "not_proxy_protocol"   // the input starts neither a v1 nor a v2 header
	ReasonVersion        = "version_not_accepted" // a header of a version the caller does not accept
	ReasonV1Line         = "bad_v1_line"          // a v1 line that is not of the protocol's form
	ReasonV1TooLong      = "v1_too_long"          // no CRLF in the first MaxV1Length bytes
	ReasonAddress        = "bad_address"          // a v1 address that is not of its family
	ReasonPort           = "bad_port"             // a v1 port that is not a decimal 0-65535
	ReasonV2VersionCmd   = "bad_v2_version"       // a v2 version other than 2, or an unknown command
	ReasonV2Family       = "bad_v2_family"        // a v2 address family or transport the protocol does not define
	ReasonV2Length       = "bad_v2_length"        // a v2 address block shorter than its family needs
	ReasonHeaderTooLarge = "header_too_large"     // a v2 header longer than Options.MaxV2Length
	ReasonTLV            = "bad_tlv"              // a v2 TLV that runs past the header
	ReasonChecksum       = "bad_checksum"         // a v2 CRC32C TLV that does not match the header
)

// Error is malformed or unacceptable PROXY protocol input. Reason is one of
// the Reason constants; the message says what failed and with what value.
// errors.Is matches two Errors with the same Reason:
//
//	if errors.Is(err, &proxyproto.Error{Reason: proxyproto.ReasonVersion}) { ... }
type Error struct {
	Reason string
	msg    string
}

// Error returns a message such as
// "proxyproto: v2: address block of 8 bytes, want 12 for TCP over IPv4".
func (e *Error) Error() string { return "proxyproto: " + e.msg }

// Is reports whether target is an *Error with the same Reason.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Reason == e.Reason
}

func errorf(reason, format string, args ...any) *Error {
	return &Error{Reason: reason, msg: fmt.Sprintf(format, args...)}
}

// ErrorReason returns the Reason of the first *Error in err's chain, ""
// when err is nil, and "other" for errors not produced by this package.
func ErrorReason(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return "other"
}

// quoteStart quotes at most the first 16 bytes of b, for messages about
// input that is not a header.
func quoteStart(b []byte) string {
	if len(b) > 16 {
		return fmt.Sprintf("%q...", b[:16])
	}
	return fmt.Sprintf("%q", b)
}
