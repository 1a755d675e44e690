package kick

import (
	"errors"
	"fmt"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/protocol/textcomp"
)

// MaxReason is how much of a kick's reason text is kept, in bytes, for
// the chat notice and the log.
const MaxReason = 256

// Reason returns the plain text of a Disconnect packet's reason (packet:
// its ID and data, in the stream's own form: a JSON string before 1.20.3,
// network NBT from then on), at most MaxReason bytes, "…" marking a cut.
func Reason(packet []byte, chatNBT bool) (string, error) {
	_, n, err := mc.ReadVarInt(packet)
	if err == nil && n == 0 {
		err = errors.New("the packet ends before its ID")
	}
	if err != nil {
		return "", fmt.Errorf("disconnect of %d bytes: %w", len(packet), err)
	}
	data := packet[n:]
	var text string
	var cut bool
	if chatNBT {
		var used int
		if text, cut, used, err = textcomp.NBT(data, MaxReason); err == nil && used != len(data) {
			err = fmt.Errorf("%d bytes after the reason", len(data)-used)
		}
	} else {
		var js []byte
		if js, err = jsonString(data); err == nil {
			text, cut, err = textcomp.JSON(js, MaxReason)
		}
	}
	if err != nil {
		return "", fmt.Errorf("disconnect reason: %w", err)
	}
	if cut {
		text += "…"
	}
	return text, nil
}

// jsonString reads the whole of data as one protocol string (a VarInt
// byte length, then the bytes).
func jsonString(data []byte) ([]byte, error) {
	size, n, err := mc.ReadVarInt(data)
	switch {
	case err != nil:
		return nil, fmt.Errorf("string length: %w", err)
	case n == 0:
		return nil, errors.New("no string length")
	case size < 0 || int(size) != len(data)-n:
		return nil, fmt.Errorf("string of %d bytes in %d bytes of data", size, len(data)-n)
	}
	return data[n:], nil
}
