package tlv

import "strconv"

// Reason classifies the protocol violation reported by a [FrameError].
//
// The zero Reason is not used by this package.
type Reason uint8

const (
	// ReasonBodyTooLarge means a header announced a body longer than the
	// Format's MaxBody (which never exceeds math.MaxInt32).
	ReasonBodyTooLarge Reason = iota + 1

	// ReasonErrorTypeFromClient means a client sent a frame carrying the
	// reserved error type, which only a server may send.
	ReasonErrorTypeFromClient
)

// String returns a short, stable, snake_case name for r, suitable as a
// metrics label: "body_too_large", "error_type_from_client", or "unknown"
// for a value not defined by this package.
func (r Reason) String() string {
	switch r {
	case ReasonBodyTooLarge:
		return "body_too_large"
	case ReasonErrorTypeFromClient:
		return "error_type_from_client"
	}
	return "unknown"
}

// A FrameError reports a frame that violates the protocol. Such an error is
// not recoverable on a stream connection: the frame boundaries can no longer
// be trusted, so the connection should be closed (optionally after sending
// an error frame built with [Format.AppendError]).
//
// Use errors.As to retrieve it:
//
//	var fe *tlv.FrameError
//	if errors.As(err, &fe) {
//		metrics.Inc(fe.Reason.String())
//	}
type FrameError struct {
	// Reason says which rule was violated.
	Reason Reason

	// Value is the offending value as it appeared on the wire: the
	// announced body length for ReasonBodyTooLarge, the message type
	// (without the keep-alive bit) for ReasonErrorTypeFromClient.
	Value int64

	// Limit is the limit that Value exceeded: MaxBody for
	// ReasonBodyTooLarge. It is zero when the Reason has no limit.
	Limit int64
}

// Error returns a description of the violation naming the offending value,
// for example "tlv: body length 5000000 exceeds maximum 1048576".
func (e *FrameError) Error() string {
	switch e.Reason {
	case ReasonBodyTooLarge:
		return "tlv: body length " + strconv.FormatInt(e.Value, 10) +
			" exceeds maximum " + strconv.FormatInt(e.Limit, 10)
	case ReasonErrorTypeFromClient:
		return "tlv: client sent frame with reserved error type 0x" +
			strconv.FormatInt(e.Value, 16)
	}
	return "tlv: invalid frame (reason " + strconv.Itoa(int(e.Reason)) +
		", value " + strconv.FormatInt(e.Value, 10) + ")"
}
