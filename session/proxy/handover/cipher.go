package handover

import (
	"encoding/json"
	"fmt"
)

// Cipher is an encrypted client connection's state as it travels: the
// shared secret the client agreed on (AES-128 key and first IV), and each
// direction's CFB8 shift register at the stream position the new process
// resumes at. Encrypt is the register of what goes to the client, after
// every byte relayed or queued toward it (State.ToClient included);
// Decrypt that of what comes from it, after every byte consumed, so that
// State.ClientIn is the next ciphertext it decrypts.
//
// The key is a secret. It crosses only the hand-over socket, a Unix socket
// between two processes of the same user, in the binary tail of the state
// message (Encode); a Cipher writes as REDACTED under every fmt verb, in
// JSON and as text, so that a log line or an error quoting a State cannot
// carry it.
type Cipher struct {
	Key     Key
	Encrypt [16]byte
	Decrypt [16]byte
}

// Key is an online session's shared secret. It writes as REDACTED
// everywhere; only Reveal gives it.
type Key [16]byte

// Reveal returns the key itself, for the code that makes ciphers of it;
// never log or show what it returns.
func (k *Key) Reveal() []byte { return k[:] }

// redacted is what a Key or a Cipher shows in place of its value.
const redacted = "REDACTED"

// String returns REDACTED.
func (Key) String() string { return redacted }

// GoString returns REDACTED quoted, so that %#v redacts too.
func (Key) GoString() string { return fmt.Sprintf("%q", redacted) }

// Format writes REDACTED under every verb.
func (Key) Format(f fmt.State, verb rune) { formatRedacted(f, verb) }

// MarshalText returns REDACTED.
func (Key) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// MarshalJSON returns REDACTED as a JSON string.
func (Key) MarshalJSON() ([]byte, error) { return json.Marshal(redacted) }

// String returns REDACTED.
func (Cipher) String() string { return redacted }

// GoString returns REDACTED quoted, so that %#v redacts too.
func (Cipher) GoString() string { return fmt.Sprintf("%q", redacted) }

// Format writes REDACTED under every verb.
func (Cipher) Format(f fmt.State, verb rune) { formatRedacted(f, verb) }

// MarshalText returns REDACTED.
func (Cipher) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// MarshalJSON returns REDACTED as a JSON string.
func (Cipher) MarshalJSON() ([]byte, error) { return json.Marshal(redacted) }

func formatRedacted(f fmt.State, verb rune) {
	fmt.Fprintf(f, fmt.FormatString(f, verb), redacted)
}
