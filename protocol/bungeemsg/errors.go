package bungeemsg

import (
	"errors"
	"fmt"
)

// The errors of this package: every error it returns wraps one of them
// (match with errors.Is) and says what failed with what value. Their
// texts are stable, short and lower-case, to be used as metrics labels or
// log fields (ErrorReason).
var (
	ErrShort      = errors.New("short")       // the payload ends inside a field
	ErrBadUTF     = errors.New("bad_utf")     // a string that is not modified UTF-8
	ErrTooLong    = errors.New("too_long")    // a payload over MaxPayload, or a field over its bound
	ErrBadLength  = errors.New("bad_length")  // a Forward data length that is a negative short
	ErrUnknownSub = errors.New("unknown_sub") // a subchannel this package does not know
	ErrNoResponse = errors.New("no_response") // a subchannel the proxy sends no answer to
	ErrBadField   = errors.New("bad_field")   // a field value the format cannot carry (an encoder's error)
)

var reasons = []error{ErrShort, ErrBadUTF, ErrTooLong, ErrBadLength, ErrUnknownSub, ErrNoResponse, ErrBadField}

// errorf returns an error of kind, as "<message>: <kind>".
func errorf(kind error, format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, kind)...)
}

// public prefixes the package's name to an error its exported functions
// return.
func public(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("bungeemsg: %w", err)
}

// within says where err happened (a subchannel and a field).
func within(err error, format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, err)...)
}

// ErrorReason returns the text of the package error err wraps, "" when err
// is nil, and "other" for errors not produced by this package.
func ErrorReason(err error) string {
	if err == nil {
		return ""
	}
	for _, r := range reasons {
		if errors.Is(err, r) {
			return r.Error()
		}
	}
	return "other"
}
