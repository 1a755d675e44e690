package push

import (
	"bytes"
	"fmt"
)

// SubscribeVerb starts a TCP subscribe request line.
const SubscribeVerb = "SUBSCRIBE "

// MaxSubscribeLine is the longest subscribe request line, "\r\n" included.
const MaxSubscribeLine = len(SubscribeVerb) + MaxTopicLen + 2

// ParseSubscribe parses the subscribe request line at the start of b. It
// returns the topic (aliasing b) and the line's length, ErrIncomplete when b
// is a proper prefix of a line that may still be valid, or an error.
func ParseSubscribe(b []byte) (topic []byte, n int, err error) {
	k := min(len(b), len(SubscribeVerb))
	if string(b[:k]) != SubscribeVerb[:k] {
		return nil, 0, fmt.Errorf("push: subscribe request does not start with %q", SubscribeVerb)
	}
	i := bytes.IndexByte(b[:min(len(b), MaxSubscribeLine)], '\n')
	if i < 0 {
		if len(b) >= MaxSubscribeLine {
			return nil, 0, fmt.Errorf("push: subscribe request line longer than %d bytes", MaxSubscribeLine)
		}
		return nil, 0, ErrIncomplete
	}
	if i < len(SubscribeVerb) {
		return nil, 0, fmt.Errorf("push: subscribe request line ends before its topic")
	}
	topic = b[len(SubscribeVerb):i]
	if len(topic) > 0 && topic[len(topic)-1] == '\r' {
		topic = topic[:len(topic)-1]
	}
	if err := CheckTopic(topic); err != nil {
		return nil, 0, fmt.Errorf("push: subscribe request: %w", err)
	}
	return topic, i + 1, nil
}

// AppendSubscribe appends a subscribe request line for topic to dst.
func AppendSubscribe(dst, topic []byte) []byte {
	dst = append(dst, SubscribeVerb...)
	dst = append(dst, topic...)
	return append(dst, '\n')
}
