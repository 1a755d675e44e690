package login

import (
	"fmt"

	"github.com/tidegate/tidegate/internal/keyed"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/proxy/handover"
)

// What a live upgrade carries of a session whose login the proxy completed
// (package handover's Login and Cipher): the old process takes it from the
// session's Kept and Ciphers as it detaches the session, and the new one
// makes them again (Resume) and installs them on the session's loop.

// Kept is what a relaying session whose login the proxy completed keeps
// of it: both sides' compression thresholds and the player's profile. It
// is kept per loop (KeptTable), as a session has no room for it.
type Kept = handover.Login

// Kept returns what the session keeps of b once its login is done.
func (b *Backend) Kept() *Kept {
	client := -1
	if mc.LoginLayoutOf(b.protocol).Compression {
		client = b.threshold // what AppendClientLogin told the client
	}
	k := &Kept{ClientThreshold: client, BackendThreshold: b.threshold, UUID: b.uuid, Name: string(b.name)}
	for _, p := range b.props {
		k.Properties = append(k.Properties, handover.Property{Name: string(p.Name), Value: string(p.Value), Signature: string(p.Signature)})
	}
	return k
}

// KeptTable holds what a loop's terminated sessions keep, by key; its zero
// value is empty and ready.
type KeptTable[K comparable] struct{ keyed.Map[K, *Kept] }

// Keep records what k keeps of its login b; a nil b (a relayed login)
// records nothing.
func (t *KeptTable[K]) Keep(k K, b *Backend) {
	if b != nil {
		t.Set(k, b.Kept())
	}
}

// HandOver returns the cipher state of c as it stands, for the state
// message; nil ciphers return nil. Its registers are the stream positions
// of every byte the ciphers have seen: the caller detaches the session in
// the same loop callback, so nothing moves after.
func (c *Ciphers) HandOver() *handover.Cipher {
	if c == nil {
		return nil
	}
	return &handover.Cipher{Key: c.secret, Encrypt: c.Encrypt.Register(), Decrypt: c.Decrypt.Register()}
}

// Resumed is a handed-over session's login state, made again in the new
// process from its state message.
type Resumed struct {
	Kept    *Kept
	Ciphers *Ciphers
}

// Resume makes the login state of a handed-over session from what its
// state message carried (both nil: a relayed login). Both sides must
// compress at the same threshold: this build relays a terminated session's
// frames untouched.
func Resume(k *Kept, c *handover.Cipher) (Resumed, error) {
	if k == nil {
		return Resumed{}, nil
	}
	if k.ClientThreshold != k.BackendThreshold {
		return Resumed{}, fmt.Errorf("login: handed-over session compresses at %d toward the client and %d toward the backend; this process does not re-frame", k.ClientThreshold, k.BackendThreshold)
	}
	r := Resumed{Kept: k}
	if c != nil {
		enc, dec, err := mc.ResumeConnCiphers(c.Key.Reveal(), c.Encrypt, c.Decrypt)
		if err != nil {
			return Resumed{}, fmt.Errorf("login: resuming a handed-over session's ciphers: %w", err)
		}
		r.Ciphers = &Ciphers{Encrypt: enc, Decrypt: dec, secret: c.Key}
	}
	return r, nil
}

// DecodeState decodes a state message (handover.Decode) and makes the
// login state it carries again (Resume).
func DecodeState(data []byte) (handover.State, Resumed, error) {
	st, err := handover.Decode(data)
	if err != nil {
		return st, Resumed{}, err
	}
	r, err := Resume(st.Login, st.Cipher)
	return st, r, err
}

// Forget drops k from a loop's tables, as its session ends or leaves.
func Forget[K comparable](k K, kept *KeptTable[K], ciphers *CipherTable[K]) {
	kept.Delete(k)
	ciphers.Delete(k)
}

// Install records r for k in a loop's tables, on that loop, and reports
// whether k is encrypted.
func Install[K comparable](r Resumed, k K, kept *KeptTable[K], ciphers *CipherTable[K]) (encrypted bool) {
	if r.Kept != nil {
		kept.Set(k, r.Kept)
	}
	if r.Ciphers != nil {
		ciphers.Set(k, r.Ciphers)
	}
	return r.Ciphers != nil
}
