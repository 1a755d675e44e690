package push

import (
	"bytes"
	"fmt"
	"net/url"
	"strings"
)

// DefaultMaxHeader is the default limit on an HTTP request's head (request
// line and headers, blank line included).
const DefaultMaxHeader = 8 << 10

// EventsPath is the path SSE subscribers request.
const EventsPath = "/events"

// HTTPError is a request the server answers with an error status.
type HTTPError struct {
	// Status is the HTTP status code to answer with.
	Status int
	// Reason says what was wrong, for the response body and logs.
	Reason string
}

// Error implements the error interface.
func (e *HTTPError) Error() string { return fmt.Sprintf("push: http %d: %s", e.Status, e.Reason) }

// HTTPRequest is a parsed SSE subscribe request; its fields alias the input
// except Topic, which is unescaped.
type HTTPRequest struct {
	Method []byte
	Target []byte
	// Topic is the value of the topic query parameter.
	Topic string
}

// ParseHTTPRequest parses the HTTP/1.x request head at the start of b,
// accepting CRLF or bare LF line endings. It returns the request and the
// head's length, ErrIncomplete when the head has not ended yet within
// maxHeader bytes, or an *HTTPError: 400 for malformed requests or a
// missing or invalid topic, 431 for a head longer than maxHeader, 405 for a
// method other than GET, 404 for a path other than EventsPath, 505 for an
// HTTP version other than 1.x. It allocates only for the query.
func ParseHTTPRequest(b []byte, maxHeader int) (HTTPRequest, int, error) {
	head := b[:min(len(b), maxHeader)]
	// Request line.
	eol := bytes.IndexByte(head, '\n')
	if eol < 0 {
		if err := checkRequestLinePrefix(head); err != nil {
			return HTTPRequest{}, 0, err
		}
		return HTTPRequest{}, 0, incompleteOrTooLarge(b, maxHeader)
	}
	line := trimCR(head[:eol])
	sp1 := bytes.IndexByte(line, ' ')
	sp2 := bytes.LastIndexByte(line, ' ')
	if sp1 <= 0 || sp2 == sp1 {
		return HTTPRequest{}, 0, badRequest("malformed request line")
	}
	req := HTTPRequest{Method: line[:sp1], Target: line[sp1+1 : sp2]}
	proto := line[sp2+1:]
	if !isToken(req.Method) {
		return HTTPRequest{}, 0, badRequest("malformed method")
	}
	if len(req.Target) == 0 || bytes.IndexByte(req.Target, ' ') >= 0 {
		return HTTPRequest{}, 0, badRequest("malformed request target")
	}
	if len(proto) != 8 || string(proto[:7]) != "HTTP/1." || proto[7] < '0' || proto[7] > '9' {
		if len(proto) >= 5 && string(proto[:5]) == "HTTP/" {
			return HTTPRequest{}, 0, &HTTPError{Status: 505, Reason: "only HTTP/1.x is supported"}
		}
		return HTTPRequest{}, 0, badRequest("malformed protocol version")
	}
	// Header lines, until a blank line.
	pos := eol + 1
	for {
		i := bytes.IndexByte(head[pos:], '\n')
		if i < 0 {
			return HTTPRequest{}, 0, incompleteOrTooLarge(b, maxHeader)
		}
		hl := trimCR(head[pos : pos+i])
		pos += i + 1
		if len(hl) == 0 {
			break
		}
		colon := bytes.IndexByte(hl, ':')
		if colon <= 0 || !isToken(hl[:colon]) {
			return HTTPRequest{}, 0, badRequest("malformed header line")
		}
		for _, c := range hl[colon+1:] {
			if (c < 0x20 && c != '\t') || c == 0x7F {
				return HTTPRequest{}, 0, badRequest("control character in header value")
			}
		}
	}
	if string(req.Method) != "GET" {
		return HTTPRequest{}, 0, &HTTPError{Status: 405, Reason: "only GET is allowed"}
	}
	path, query, _ := bytes.Cut(req.Target, []byte{'?'})
	if string(path) != EventsPath {
		return HTTPRequest{}, 0, &HTTPError{Status: 404, Reason: "no such path; subscribe with GET " + EventsPath + "?topic=NAME"}
	}
	vals, err := url.ParseQuery(string(query))
	if err != nil {
		return HTTPRequest{}, 0, badRequest("malformed query")
	}
	topic := vals.Get("topic")
	if err := CheckTopic([]byte(topic)); err != nil {
		return HTTPRequest{}, 0, badRequest("missing or invalid topic: " + err.Error())
	}
	req.Topic = topic
	return req, pos, nil
}

// checkRequestLinePrefix rejects an unfinished request line early when its
// method already holds a byte no method may hold.
func checkRequestLinePrefix(b []byte) error {
	m := b
	if i := bytes.IndexByte(b, ' '); i >= 0 {
		m = b[:i]
		if i == 0 {
			return badRequest("malformed request line")
		}
	}
	if !isToken(m) && len(m) > 0 {
		return badRequest("malformed method")
	}
	return nil
}

func incompleteOrTooLarge(b []byte, maxHeader int) error {
	if len(b) >= maxHeader {
		return &HTTPError{Status: 431, Reason: fmt.Sprintf("request head longer than %d bytes", maxHeader)}
	}
	return ErrIncomplete
}

func badRequest(reason string) error { return &HTTPError{Status: 400, Reason: reason} }

func trimCR(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] == '\r' {
		return b[:len(b)-1]
	}
	return b
}

// tokenDelimiters are the visible characters a token may not hold.
const tokenDelimiters = `"(),/:;<=>?@[\]{}`

// isToken reports whether b is a non-empty RFC 9110 token.
func isToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c <= ' ' || c >= 0x7F || strings.IndexByte(tokenDelimiters, c) >= 0 {
			return false
		}
	}
	return true
}

// statusText covers the statuses ParseHTTPRequest returns.
var statusText = map[int]string{
	400: "Bad Request",
	404: "Not Found",
	405: "Method Not Allowed",
	431: "Request Header Fields Too Large",
	505: "HTTP Version Not Supported",
}

// AppendHTTPError appends a complete HTTP/1.1 error response with a
// plain-text body naming the reason; the connection is to be closed after it.
func AppendHTTPError(dst []byte, e *HTTPError) []byte {
	text := statusText[e.Status]
	if text == "" {
		text = "Error"
	}
	body := e.Reason + "\n"
	dst = fmt.Appendf(dst, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\n", e.Status, text, len(body))
	if e.Status == 405 {
		dst = append(dst, "Allow: GET\r\n"...)
	}
	dst = append(dst, "Connection: close\r\n\r\n"...)
	return append(dst, body...)
}
