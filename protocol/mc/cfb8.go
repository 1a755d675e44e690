package mc

import (
	"crypto/aes"
	"crypto/cipher"
	"fmt"
)

// aesRoundKeys is the size of AES-128's 11 round keys.
const aesRoundKeys = 11 * aes.BlockSize

// cfb8Ring is the size of a CFB8's ring: the 16-byte shift register slides
// through it one byte per byte of the stream and is copied back to the
// front when it reaches the end, once every cfb8Ring-16 bytes instead of
// shifting 16 bytes for every byte.
const cfb8Ring = 64

// CFB8 is AES in 8-bit cipher feedback mode, the cipher of an online-mode
// Minecraft connection after Encryption Response: each byte is XORed with
// the first byte of the encryption of a 16-byte shift register, into which
// the ciphertext byte is then shifted. It implements cipher.Stream; dst and
// src of XORKeyStream must overlap entirely (in place) or not at all, and
// XORKeyStream never allocates.
//
// Encryption is byte by byte: the next register holds the byte just
// produced. Decryption knows every ciphertext byte in advance, so each
// output byte depends only on input; it is computed from the end of the
// input backwards, reading each register straight from the input (in place
// too, since a byte is overwritten only after every byte that reads it),
// with no shifting at all.
//
// On amd64 with AES-NI, a CFB8 made by NewConnCiphers runs kernels of its
// own (cfb8_amd64.s): decryption encrypts eight registers at once, so that
// the AES units pipeline them, and encryption keeps the register and the
// round keys in vector registers instead of calling cipher.Block for every
// byte. Elsewhere, and when made from a cipher.Block, it calls the Block.
type CFB8 struct {
	block   cipher.Block
	keys    *[aesRoundKeys]byte // round keys for the AES-NI kernels; nil: use block
	decrypt bool
	pos     int // the register is ring[pos : pos+16]
	ring    [cfb8Ring]byte
	ks      [aes.BlockSize]byte // scratch for one block's encryption
}

// NewCFB8Encrypter returns a CFB8 that encrypts with block, a 16-byte
// block cipher, starting from register iv (16 bytes). It panics on other
// sizes, as cipher.NewCFBEncrypter does.
func NewCFB8Encrypter(block cipher.Block, iv []byte) *CFB8 {
	return newCFB8(block, iv, false)
}

// NewCFB8Decrypter returns a CFB8 that decrypts with block, a 16-byte
// block cipher, starting from register iv (16 bytes). It panics on other
// sizes, as cipher.NewCFBDecrypter does.
func NewCFB8Decrypter(block cipher.Block, iv []byte) *CFB8 {
	return newCFB8(block, iv, true)
}

func newCFB8(block cipher.Block, iv []byte, decrypt bool) *CFB8 {
	if block.BlockSize() != aes.BlockSize {
		panic(fmt.Sprintf("mc: CFB8 block size %d, want %d", block.BlockSize(), aes.BlockSize))
	}
	if len(iv) != aes.BlockSize {
		panic(fmt.Sprintf("mc: CFB8 IV of %d bytes, want %d", len(iv), aes.BlockSize))
	}
	x := &CFB8{block: block, decrypt: decrypt}
	copy(x.ring[:], iv)
	return x
}

// NewConnCiphers returns the two ciphers of an online-mode connection whose
// Encryption Response carried sharedSecret (16 bytes): AES-128 with key and
// IV both the secret, one CFB8 for each direction, sharing one key schedule.
func NewConnCiphers(sharedSecret []byte) (encrypt, decrypt *CFB8, err error) {
	if len(sharedSecret) != aes.BlockSize {
		return nil, nil, fmt.Errorf("mc: shared secret of %d bytes, want %d", len(sharedSecret), aes.BlockSize)
	}
	block, keys, err := newAES(sharedSecret)
	if err != nil {
		return nil, nil, err
	}
	encrypt, decrypt = NewCFB8Encrypter(block, sharedSecret), NewCFB8Decrypter(block, sharedSecret)
	encrypt.keys, decrypt.keys = keys, keys
	return encrypt, decrypt, nil
}

// ResumeConnCiphers returns the ciphers of an online-mode connection
// taken over mid-stream, as a live upgrade hands it over: the shared
// secret and each direction's Register when the old process stopped.
func ResumeConnCiphers(sharedSecret []byte, encryptRegister, decryptRegister [aes.BlockSize]byte) (encrypt, decrypt *CFB8, err error) {
	if encrypt, decrypt, err = NewConnCiphers(sharedSecret); err != nil {
		return nil, nil, err
	}
	copy(encrypt.ring[:], encryptRegister[:])
	copy(decrypt.ring[:], decryptRegister[:])
	return encrypt, decrypt, nil
}

// newAES returns the AES-128 cipher of key and, where the AES-NI kernels
// run, its round keys.
func newAES(key []byte) (cipher.Block, *[aesRoundKeys]byte, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, nil, fmt.Errorf("mc: AES key of %d bytes: %w", len(key), err)
	}
	if !haveAESNI || len(key) != aes.BlockSize {
		return block, nil, nil
	}
	keys := new([aesRoundKeys]byte)
	expandKey128(&key[0], keys)
	return block, keys, nil
}

// Register returns the current shift register: the last 16 ciphertext
// bytes of the stream (the IV before any). A stream resumed elsewhere with
// the same key and this register as its IV goes on exactly where this one
// stopped, which is what a live upgrade hands over.
func (x *CFB8) Register() [aes.BlockSize]byte {
	return [aes.BlockSize]byte(x.ring[x.pos : x.pos+aes.BlockSize])
}

// SetRegister makes r the shift register, as if the last 16 ciphertext
// bytes had been r: a reader that decrypted a few bytes ahead (a frame's
// length prefix, to see whether the whole frame is in) takes them back by
// setting the Register it read before them.
func (x *CFB8) SetRegister(r [aes.BlockSize]byte) {
	x.pos = 0
	copy(x.ring[:aes.BlockSize], r[:])
}

// Decrypting reports whether x decrypts.
func (x *CFB8) Decrypting() bool { return x.decrypt }

// XORKeyStream encrypts or decrypts src into dst, which must be at least as
// long; it panics when dst is shorter.
func (x *CFB8) XORKeyStream(dst, src []byte) {
	if len(dst) < len(src) {
		panic("mc: CFB8 output smaller than input")
	}
	if x.decrypt {
		x.decryptBackwards(dst[:len(src)], src)
		return
	}
	if x.keys != nil && len(src) > 0 {
		encryptCFB8(x.keys, (*[aes.BlockSize]byte)(x.ring[x.pos:x.pos+aes.BlockSize]), &dst[0], &src[0], len(src))
		return
	}
	x.xorBytewise(dst[:len(src)], src)
}

// xorBytewise runs the register one byte at a time, the only way to
// encrypt; decryption this way is what decryptBackwards is measured
// against.
func (x *CFB8) xorBytewise(dst, src []byte) {
	for i, b := range src {
		x.block.Encrypt(x.ks[:], x.ring[x.pos:x.pos+aes.BlockSize])
		out := b ^ x.ks[0]
		c := out // the ciphertext byte enters the register
		if x.decrypt {
			c = b
		}
		dst[i] = out
		x.ring[x.pos+aes.BlockSize] = c
		x.pos++
		if x.pos+aes.BlockSize == len(x.ring) {
			copy(x.ring[:aes.BlockSize], x.ring[x.pos:])
			x.pos = 0
		}
	}
}

// decryptBackwards decrypts src into dst (the same bytes or disjoint ones)
// from the last byte to the first. Byte i's register is the 16 ciphertext
// bytes before it: inside src from i = 16 on, and for the first 16 the old
// register followed by src's head, copied aside into the ring (not a local,
// which would escape through the cipher.Block call) before dst overwrites
// it.
func (x *CFB8) decryptBackwards(dst, src []byte) {
	n := len(src)
	if n == 0 {
		return
	}
	const bs = aes.BlockSize
	head := x.ring[:2*bs]
	copy(head, x.ring[x.pos:x.pos+bs]) // copy handles the overlap when pos < 16
	h := copy(head[bs:], src)
	var next [bs]byte // the register after src
	if n >= bs {
		copy(next[:], src[n-bs:])
	} else {
		copy(next[:], head[h:h+bs])
	}
	i := n - 1
	if groups := (n - bs) / 8; x.keys != nil && groups > 0 {
		// The last groups × 8 bytes in eights, by the kernel; the rest
		// below.
		j := n - 8*groups
		decryptGroups8(x.keys, &src[j-bs], &dst[j], groups)
		i = j - 1
	}
	ks := x.ks[:]
	for ; i >= bs; i-- {
		x.block.Encrypt(ks, src[i-bs:i])
		dst[i] = src[i] ^ ks[0]
	}
	for i := h - 1; i >= 0; i-- {
		x.block.Encrypt(ks, head[i:i+bs])
		dst[i] = head[bs+i] ^ ks[0]
	}
	x.pos = 0
	copy(x.ring[:bs], next[:])
}
