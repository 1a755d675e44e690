package handover

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
)

// The state message's versions. Version 1 is the JSON of a State, as every
// process before version 2 wrote and read it (it starts with '{'). Version
// 2 starts with the byte 2, then the length of the JSON (uvarint), the JSON
// (with Login), and a binary tail: a flags byte and, with flagCipher, the
// Cipher's key and its two registers, 16 bytes each.
//
// The old process sends version 2 only to a new process that said it reads
// it (its ready message); to any other it sends version 1 and keeps the
// sessions that need version 2 (NeedsV2). A process that reads only
// version 1 refuses a version 2 message cleanly (it is no JSON), and one
// that reads version 2 refuses any later version: the old process then
// takes the session back.
const (
	StateV1 = 1
	StateV2 = 2
	// StateVersion is the newest version this build reads and writes.
	StateVersion = StateV2
)

// Version is the state message version to send a process that reads up
// to v (0 for one that does not say: version 1).
func Version(v int) int { return min(max(v, StateV1), StateVersion) }

// MaxState bounds a state message: a session's state is a few kilobytes
// plus what its sockets had buffered, which the reactor's buffers bound
// well below this.
const MaxState = 64 << 20

const (
	flagCipher  = 1
	cipherBytes = 3 * 16
)

// NeedsV2 reports whether a session whose login left l (nil for a relayed
// login) can be sent only as version 2: an encrypted one, or one whose two
// sides compress at different thresholds (the relay re-frames it; a
// version 1 process would relay it untouched).
func NeedsV2(l *Login, encrypted bool) bool {
	return encrypted || l != nil && l.ClientThreshold != l.BackendThreshold
}

// Encode returns the state message of st in version v (StateV1 or
// StateV2). Version 1 carries neither Login nor Cipher: it fails for a
// state that needs version 2.
func Encode(st *State, v int) ([]byte, error) {
	switch v {
	case StateV1:
		if NeedsV2(st.Login, st.Cipher != nil) {
			return nil, errors.New("handover: the session's state needs version 2 of the state message")
		}
		c := *st
		c.Login = nil
		return json.Marshal(&c)
	case StateV2:
		js, err := json.Marshal(st)
		if err != nil {
			return nil, fmt.Errorf("handover: encoding the state: %w", err)
		}
		out := make([]byte, 0, 1+binary.MaxVarintLen64+len(js)+1+cipherBytes)
		out = append(out, StateV2)
		out = binary.AppendUvarint(out, uint64(len(js)))
		out = append(out, js...)
		if c := st.Cipher; c != nil {
			out = append(out, flagCipher)
			out = append(out, c.Key.Reveal()...)
			out = append(append(out, c.Encrypt[:]...), c.Decrypt[:]...)
		} else {
			out = append(out, 0)
		}
		return out, nil
	}
	return nil, fmt.Errorf("handover: no state message version %d", v)
}

// Decode reads a state message of version 1 or 2. It is input from another
// process: anything malformed, of another version, or inconsistent (a
// threshold below -1, a cipher without a login) is an error.
func Decode(data []byte) (State, error) {
	var st State
	if len(data) == 0 {
		return st, errors.New("handover: empty state message")
	}
	if len(data) > MaxState {
		return st, fmt.Errorf("handover: state message of %d bytes, at most %d", len(data), MaxState)
	}
	switch data[0] {
	case '{':
		if err := json.Unmarshal(data, &st); err != nil {
			return State{}, fmt.Errorf("handover: state message version 1: %w", err)
		}
		st.Login = nil // not version 1's: a sender that wrote it did not mean it
		return st, nil
	case StateV2:
	default:
		return st, fmt.Errorf("handover: state message version %d, this process reads 1 to %d", data[0], StateVersion)
	}
	n, w := binary.Uvarint(data[1:])
	if w <= 0 || n > uint64(len(data)-1-w) {
		return st, fmt.Errorf("handover: state message version 2: JSON length %d in a message of %d bytes", n, len(data))
	}
	js, tail := data[1+w:1+w+int(n)], data[1+w+int(n):]
	if err := json.Unmarshal(js, &st); err != nil {
		return State{}, fmt.Errorf("handover: state message version 2: %w", err)
	}
	if len(tail) == 0 {
		return State{}, errors.New("handover: state message version 2: no flags")
	}
	switch flags, rest := tail[0], tail[1:]; {
	case flags == 0 && len(rest) == 0:
	case flags == flagCipher && len(rest) == cipherBytes:
		c := &Cipher{}
		copy(c.Key[:], rest[:16])
		copy(c.Encrypt[:], rest[16:32])
		copy(c.Decrypt[:], rest[32:])
		st.Cipher = c
	default:
		return State{}, fmt.Errorf("handover: state message version 2: flags %#x with %d bytes after them", flags, len(rest))
	}
	if l := st.Login; l != nil && (l.ClientThreshold < -1 || l.BackendThreshold < -1) {
		return State{}, fmt.Errorf("handover: state message: compression thresholds %d and %d", l.ClientThreshold, l.BackendThreshold)
	}
	if st.Cipher != nil && st.Login == nil {
		return State{}, errors.New("handover: state message: cipher state without a login")
	}
	return st, nil
}
