package play

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/tidegate/tidegate/protocol/textcomp"
)

// maxNBTDepth is how deep compounds and lists may nest, as vanilla allows
// (protocol/textcomp's skipper applies it).
const maxNBTDepth = 512

// skipNamedNBT returns the length of the named NBT tag at the start of b,
// in the network form before 1.20.2 (a type, a name, a payload). Every
// step consumes input, so the work is bounded by len(b); nesting deeper
// than maxNBTDepth is refused.
func skipNamedNBT(b []byte) (int, error) {
	if len(b) > 0 && b[0] == textcomp.TagEnd {
		return 1, nil
	}
	if len(b) < 3 || 3+int(binary.BigEndian.Uint16(b[1:])) > len(b) {
		return 0, fmt.Errorf("NBT: the tag's type and name: %w", ErrTruncated)
	}
	off := 3 + int(binary.BigEndian.Uint16(b[1:]))
	n, err := textcomp.SkipNBT(b[off:], b[0])
	if errors.Is(err, textcomp.ErrTruncated) {
		err = fmt.Errorf("%w: %w", ErrTruncated, err)
	}
	if err != nil {
		return 0, fmt.Errorf("NBT: %w", err)
	}
	return off + n, nil
}
