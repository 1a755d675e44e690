//go:build amd64 && !purego

#include "textflag.h"

// EXPAND derives the next AES-128 round key in X1 from the previous one,
// with the round constant rcon, and stores it at off(BX). X2 gets
// SubWord(RotWord(last word)) ^ rcon in every word; the new key is the
// running XOR of the old key's words, XORed with that.
#define EXPAND(rcon, off) \
	AESKEYGENASSIST $rcon, X1, X2; \
	PSHUFD          $0xff, X2, X2; \
	MOVO            X1, X3; \
	PSLLO           $4, X3; \
	PXOR            X3, X1; \
	PSLLO           $4, X3; \
	PXOR            X3, X1; \
	PSLLO           $4, X3; \
	PXOR            X3, X1; \
	PXOR            X2, X1; \
	MOVOU           X1, off(BX)

// func expandKey128(key *byte, rk *[176]byte)
TEXT ·expandKey128(SB), NOSPLIT, $0-16
	MOVQ  key+0(FP), AX
	MOVQ  rk+8(FP), BX
	MOVOU (AX), X1
	MOVOU X1, 0(BX)
	EXPAND(0x01, 16)
	EXPAND(0x02, 32)
	EXPAND(0x04, 48)
	EXPAND(0x08, 64)
	EXPAND(0x10, 80)
	EXPAND(0x20, 96)
	EXPAND(0x40, 112)
	EXPAND(0x80, 128)
	EXPAND(0x1b, 144)
	EXPAND(0x36, 160)
	RET

// ROUND8 runs one AES round with the key at off(AX) on X0 to X7.
#define ROUND8(off) \
	MOVOU  off(AX), X8; \
	AESENC X8, X0; \
	AESENC X8, X1; \
	AESENC X8, X2; \
	AESENC X8, X3; \
	AESENC X8, X4; \
	AESENC X8, X5; \
	AESENC X8, X6; \
	AESENC X8, X7

// func decryptGroups8(rk *[176]byte, win, dst *byte, groups int)
//
// Decrypts groups × 8 bytes. Group g's output byte k (dst+8g+k) is the
// ciphertext byte at win+8g+16+k XORed with the first byte of the
// encryption of the 16 bytes at win+8g+k: eight blocks in flight at once.
// Groups run from the last to the first, and each group's ciphertext is
// read before its output is stored, so dst may be win+16 (in place).
TEXT ·decryptGroups8(SB), NOSPLIT, $0-32
	MOVQ  rk+0(FP), AX
	MOVQ  win+8(FP), SI
	MOVQ  dst+16(FP), DI
	MOVQ  groups+24(FP), CX
	TESTQ CX, CX
	JZ    done
	LEAQ  -8(SI)(CX*8), SI
	LEAQ  -8(DI)(CX*8), DI

loop:
	MOVQ  16(SI), R8
	MOVOU 0(AX), X8
	MOVOU 0(SI), X0
	PXOR  X8, X0
	MOVOU 1(SI), X1
	PXOR  X8, X1
	MOVOU 2(SI), X2
	PXOR  X8, X2
	MOVOU 3(SI), X3
	PXOR  X8, X3
	MOVOU 4(SI), X4
	PXOR  X8, X4
	MOVOU 5(SI), X5
	PXOR  X8, X5
	MOVOU 6(SI), X6
	PXOR  X8, X6
	MOVOU 7(SI), X7
	PXOR  X8, X7
	ROUND8(16)
	ROUND8(32)
	ROUND8(48)
	ROUND8(64)
	ROUND8(80)
	ROUND8(96)
	ROUND8(112)
	ROUND8(128)
	ROUND8(144)
	MOVOU      160(AX), X8
	AESENCLAST X8, X0
	AESENCLAST X8, X1
	AESENCLAST X8, X2
	AESENCLAST X8, X3
	AESENCLAST X8, X4
	AESENCLAST X8, X5
	AESENCLAST X8, X6
	AESENCLAST X8, X7
	PEXTRB     $0, X0, 0(DI)
	PEXTRB     $0, X1, 1(DI)
	PEXTRB     $0, X2, 2(DI)
	PEXTRB     $0, X3, 3(DI)
	PEXTRB     $0, X4, 4(DI)
	PEXTRB     $0, X5, 5(DI)
	PEXTRB     $0, X6, 6(DI)
	PEXTRB     $0, X7, 7(DI)
	XORQ       R8, 0(DI)
	SUBQ       $8, SI
	SUBQ       $8, DI
	DECQ       CX
	JNZ        loop

done:
	RET

// func encryptCFB8(rk *[176]byte, reg *[16]byte, dst, src *byte, n int)
//
// Encrypts n bytes from src to dst (the same or disjoint), the shift
// register kept in X0 and the round keys in X2 to X12 throughout.
TEXT ·encryptCFB8(SB), NOSPLIT, $0-40
	MOVQ  rk+0(FP), AX
	MOVQ  reg+8(FP), BX
	MOVQ  dst+16(FP), DI
	MOVQ  src+24(FP), SI
	MOVQ  n+32(FP), CX
	MOVOU (BX), X0
	MOVOU 0(AX), X2
	MOVOU 16(AX), X3
	MOVOU 32(AX), X4
	MOVOU 48(AX), X5
	MOVOU 64(AX), X6
	MOVOU 80(AX), X7
	MOVOU 96(AX), X8
	MOVOU 112(AX), X9
	MOVOU 128(AX), X10
	MOVOU 144(AX), X11
	MOVOU 160(AX), X12

loop:
	TESTQ      CX, CX
	JZ         done
	MOVO       X0, X1
	PXOR       X2, X1
	AESENC     X3, X1
	AESENC     X4, X1
	AESENC     X5, X1
	AESENC     X6, X1
	AESENC     X7, X1
	AESENC     X8, X1
	AESENC     X9, X1
	AESENC     X10, X1
	AESENC     X11, X1
	AESENCLAST X12, X1
	MOVQ       X1, DX
	MOVBLZX    (SI), R8
	XORL       DX, R8
	MOVB       R8, (DI)
	PSRLO      $1, X0
	PINSRB     $15, R8, X0
	INCQ       SI
	INCQ       DI
	DECQ       CX
	JMP        loop

done:
	MOVOU X0, (BX)
	RET
