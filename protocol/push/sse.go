package push

import (
	"bytes"
	"strconv"
)

// SSE encoding pieces.
const (
	// SSEResponseHeader is the HTTP response that opens an event stream. The
	// body has no length and is not chunked: it ends when the connection closes.
	SSEResponseHeader = "HTTP/1.1 200 OK\r\n" +
		"Content-Type: text/event-stream\r\n" +
		"Cache-Control: no-cache\r\n" +
		"Connection: keep-alive\r\n" +
		"\r\n"
	// SSEDataPrefix starts every data line.
	SSEDataPrefix = "data: "
	// SSELineEnd ends a data line.
	SSELineEnd = "\n"
	// SSEEventEnd ends an event whose payload has a single line: the end of
	// its data line and the blank line that dispatches the event.
	SSEEventEnd = "\n\n"
	// SSEPing is the heartbeat event sent when nothing was written for the
	// heartbeat period.
	SSEPing = "event: ping\ndata: ping\n\n"
	// MetaKey names tidegate's meta messages.
	MetaKey = "tidegate.meta"
)

// CutLine splits payload at its first line break ("\n", "\r\n" or "\r"):
// line is what comes before it and rest what follows. found is false when
// payload has no line break; then line is all of payload. Encoding a payload
// as SSE data lines means calling CutLine until found is false: an empty
// payload is one empty line, and a trailing break yields a last, empty line.
func CutLine(payload []byte) (line, rest []byte, found bool) {
	i := bytes.IndexAny(payload, "\r\n")
	if i < 0 {
		return payload, nil, false
	}
	if payload[i] == '\r' && i+1 < len(payload) && payload[i+1] == '\n' {
		return payload[:i], payload[i+2:], true
	}
	return payload[:i], payload[i+1:], true
}

// HasLineBreak reports whether payload contains "\n" or "\r", that is
// whether its SSE encoding needs more than one data line.
func HasLineBreak(payload []byte) bool {
	return bytes.IndexByte(payload, '\n') >= 0 || bytes.IndexByte(payload, '\r') >= 0
}

// AppendSSEEvent appends the SSE encoding of one event to dst: a data line
// per line of payload, then a blank line. It is the plain reference encoding.
func AppendSSEEvent(dst, payload []byte) []byte {
	for {
		line, rest, found := CutLine(payload)
		dst = append(dst, SSEDataPrefix...)
		dst = append(dst, line...)
		dst = append(dst, SSELineEnd...)
		if !found {
			return append(dst, SSELineEnd...)
		}
		payload = rest
	}
}

// AppendDropMeta appends the JSON meta message that reports n dropped
// events: {"tidegate.meta":"droppedMessageCount","value":"n"}.
func AppendDropMeta(dst []byte, n int64) []byte {
	dst = append(dst, `{"`+MetaKey+`":"droppedMessageCount","value":"`...)
	dst = strconv.AppendInt(dst, n, 10)
	return append(dst, `"}`...)
}
