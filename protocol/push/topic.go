package push

import "fmt"

// MaxTopicLen is the longest topic name: the legacy frame's name length is
// one byte below 127.
const MaxTopicLen = 126

// CheckTopic reports whether name is a valid topic: 1 to MaxTopicLen bytes of
// printable ASCII without space (0x21-0x7E).
func CheckTopic(name []byte) error {
	if len(name) == 0 {
		return fmt.Errorf("push: empty topic name")
	}
	if len(name) > MaxTopicLen {
		return fmt.Errorf("push: topic name of %d bytes is longer than %d", len(name), MaxTopicLen)
	}
	for i, b := range name {
		if b < 0x21 || b > 0x7E {
			return fmt.Errorf("push: topic name byte %d is 0x%02x, want printable ASCII without space", i, b)
		}
	}
	return nil
}
