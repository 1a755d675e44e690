//go:build amd64 && !purego

package mc

import "golang.org/x/sys/cpu"

// haveAESNI: the AES-NI kernels of cfb8_amd64.s run here (AES and SSE4.1).
var haveAESNI = cpu.X86.HasAES && cpu.X86.HasSSE41

// expandKey128 writes the 11 AES-128 round keys of key (16 bytes) to rk.
//
//go:noescape
func expandKey128(key *byte, rk *[aesRoundKeys]byte)

// decryptGroups8 decrypts groups × 8 bytes to dst: byte k of dst is the
// ciphertext byte at win+16+k XORed with the first byte of the encryption
// of the 16 bytes at win+k. dst may be win+16 (in place).
//
//go:noescape
func decryptGroups8(rk *[aesRoundKeys]byte, win, dst *byte, groups int)

// encryptCFB8 encrypts n bytes of src to dst with the register reg, which
// it updates.
//
//go:noescape
func encryptCFB8(rk *[aesRoundKeys]byte, reg *[16]byte, dst, src *byte, n int)
