package push

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// TypePublish is the TLV message type of a publish frame.
const TypePublish = 1

// EventLenSize is the size of the length field before each event payload of
// a publish body.
const EventLenSize = 4

// Limits bound what a publish body may carry.
type Limits struct {
	// MaxEvents is the most events one body may carry.
	MaxEvents int
	// MaxEventSize is the largest event payload in bytes.
	MaxEventSize int
}

// DefaultLimits allow 1024 events per body and payloads up to 1 MiB (the
// default TLV body limit bounds the whole body to 1 MiB as well).
var DefaultLimits = Limits{MaxEvents: 1024, MaxEventSize: 1 << 20}

// PublishReason classifies why a publish body was rejected.
type PublishReason uint8

// The reasons a publish body is rejected.
const (
	ReasonShortBody     PublishReason = iota + 1 // no topic length byte
	ReasonBadTopic                               // topic empty, too long or with invalid bytes
	ReasonTruncated                              // topic or event runs past the end of the body
	ReasonNoEvents                               // the body carries no event
	ReasonTooManyEvents                          // more than Limits.MaxEvents events
	ReasonEventTooLarge                          // an event longer than Limits.MaxEventSize
	numPublishReasons
)

// NumPublishReasons is one more than the largest PublishReason, for arrays of counters.
const NumPublishReasons = int(numPublishReasons)

var publishReasonNames = [...]string{
	ReasonShortBody:     "short_body",
	ReasonBadTopic:      "bad_topic",
	ReasonTruncated:     "truncated",
	ReasonNoEvents:      "no_events",
	ReasonTooManyEvents: "too_many_events",
	ReasonEventTooLarge: "event_too_large",
}

// String returns the reason as a short snake_case label.
func (r PublishReason) String() string {
	if r == 0 || int(r) >= len(publishReasonNames) {
		return fmt.Sprintf("reason_%d", uint8(r))
	}
	return publishReasonNames[r]
}

// PublishError reports a publish body that violates the format.
type PublishError struct {
	Reason PublishReason
	// Value is the offending value: a length, a count or a byte offset.
	Value int64
	// Limit is the limit Value exceeded, when there is one.
	Limit int64
	// Err is the underlying error, if any (for example from CheckTopic).
	Err error
}

// Error implements the error interface.
func (e *PublishError) Error() string {
	s := fmt.Sprintf("push: bad publish body: %s (value %d", e.Reason, e.Value)
	if e.Limit != 0 {
		s += fmt.Sprintf(", limit %d", e.Limit)
	}
	s += ")"
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying error.
func (e *PublishError) Unwrap() error { return e.Err }

// Publish is a validated publish body. It aliases the body it was parsed
// from.
type Publish struct {
	// Topic is the topic name.
	Topic []byte
	// Count is the number of events.
	Count int
	// PayloadBytes is the sum of the payload lengths.
	PayloadBytes int

	events []byte
}

// ParsePublish validates a whole publish body without allocating (unless it
// returns an error). Iterate the events with Publish.Events.
func ParsePublish(body []byte, lim Limits) (Publish, error) {
	if len(body) < 1 {
		return Publish{}, &PublishError{Reason: ReasonShortBody}
	}
	tl := int(body[0])
	if 1+tl > len(body) {
		return Publish{}, &PublishError{Reason: ReasonTruncated, Value: int64(tl), Limit: int64(len(body) - 1)}
	}
	topic := body[1 : 1+tl]
	if err := CheckTopic(topic); err != nil {
		return Publish{}, &PublishError{Reason: ReasonBadTopic, Value: int64(tl), Limit: MaxTopicLen, Err: err}
	}
	p := Publish{Topic: topic, events: body[1+tl:]}
	for rest := p.events; len(rest) > 0; {
		if len(rest) < EventLenSize {
			return Publish{}, &PublishError{Reason: ReasonTruncated, Value: int64(len(body) - len(rest))}
		}
		n := binary.BigEndian.Uint32(rest)
		if int64(n) > int64(lim.MaxEventSize) {
			return Publish{}, &PublishError{Reason: ReasonEventTooLarge, Value: int64(n), Limit: int64(lim.MaxEventSize)}
		}
		if int64(n) > int64(len(rest)-EventLenSize) {
			return Publish{}, &PublishError{Reason: ReasonTruncated, Value: int64(n), Limit: int64(len(rest) - EventLenSize)}
		}
		if p.Count == lim.MaxEvents {
			return Publish{}, &PublishError{Reason: ReasonTooManyEvents, Value: int64(p.Count + 1), Limit: int64(lim.MaxEvents)}
		}
		p.Count++
		p.PayloadBytes += int(n)
		rest = rest[EventLenSize+int(n):]
	}
	if p.Count == 0 {
		return Publish{}, &PublishError{Reason: ReasonNoEvents}
	}
	return p, nil
}

// Events returns an iterator over the event payloads, which alias the body.
func (p *Publish) Events() EventIter { return EventIter{rest: p.events} }

// EventIter walks the events of a validated Publish.
type EventIter struct{ rest []byte }

// Next returns the next payload; ok is false after the last one.
func (it *EventIter) Next() (payload []byte, ok bool) {
	if len(it.rest) < EventLenSize {
		return nil, false
	}
	n := int(binary.BigEndian.Uint32(it.rest))
	payload = it.rest[EventLenSize : EventLenSize+n]
	it.rest = it.rest[EventLenSize+n:]
	return payload, true
}

// errTopic is returned by the encoders for a topic CheckTopic rejects.
var errTopic = errors.New("push: invalid topic")

// AppendPublish appends a publish body for topic and events to dst. It
// returns an error wrapping CheckTopic's if the topic is invalid.
func AppendPublish(dst, topic []byte, events ...[]byte) ([]byte, error) {
	if err := CheckTopic(topic); err != nil {
		return dst, fmt.Errorf("%w: %w", errTopic, err)
	}
	dst = append(dst, byte(len(topic)))
	dst = append(dst, topic...)
	for _, e := range events {
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(e)))
		dst = append(dst, e...)
	}
	return dst, nil
}
