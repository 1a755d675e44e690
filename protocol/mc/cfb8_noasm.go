//go:build !amd64 || purego

package mc

// haveAESNI is false: CFB8 runs on crypto/aes's cipher.Block alone.
const haveAESNI = false

func expandKey128(*byte, *[aesRoundKeys]byte) { panic("mc: no AES-NI kernel") }

func decryptGroups8(*[aesRoundKeys]byte, *byte, *byte, int) { panic("mc: no AES-NI kernel") }

func encryptCFB8(*[aesRoundKeys]byte, *[16]byte, *byte, *byte, int) { panic("mc: no AES-NI kernel") }
