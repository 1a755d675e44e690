package mc

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/hex"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	gomccfb8 "github.com/Tnze/go-mc/net/CFB8"
)

func unhexString(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCFB8Vector checks NIST SP 800-38A's CFB8-AES128 example (F.3.7 and
// F.3.8), whole and split, in place and not.
func TestCFB8Vector(t *testing.T) {
	key := unhexString(t, "2b7e151628aed2a6abf7158809cf4f3c")
	iv := unhexString(t, "000102030405060708090a0b0c0d0e0f")
	plain := unhexString(t, "6bc1bee22e409f96e93d7e117393172aae2d")
	ciph := unhexString(t, "3b79424c9c0dd436bace9e0ed4586a4f32b9")
	for split := 0; split <= len(plain); split++ {
		for _, inPlace := range []bool{false, true} {
			for _, dec := range []bool{false, true} {
				in, want := plain, ciph
				if dec {
					in, want = ciph, plain
				}
				kernels := split%2 == 1 // both ways, at every split parity
				x := newTestCFB8(t, key, iv, dec, kernels)
				out := make([]byte, len(in))
				src := in
				if inPlace {
					copy(out, in)
					src = out
				}
				x.XORKeyStream(out[:split], src[:split])
				x.XORKeyStream(out[split:], src[split:])
				if !bytes.Equal(out, want) {
					t.Fatalf("decrypt %v, in place %v, kernels %v, split at %d: %x, want %x", dec, inPlace, kernels, split, out, want)
				}
				if reg := x.Register(); !bytes.Equal(reg[:], ciph[len(ciph)-16:]) {
					t.Fatalf("register %x, want the last ciphertext block %x", reg, ciph[len(ciph)-16:])
				}
			}
		}
	}
}

// TestCFB8Kernels checks the AES-NI kernels' round keys and decryption
// against crypto/aes directly, and that NewConnCiphers uses them.
func TestCFB8Kernels(t *testing.T) {
	if !haveAESNI {
		t.Skip("no AES-NI kernels in this build or on this CPU")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 200 {
		groups := round % 4
		key, win := make([]byte, 16), make([]byte, 16+8*groups)
		for i := range key {
			key[i] = byte(rng.Uint32())
		}
		for i := range win {
			win[i] = byte(rng.Uint32())
		}
		block, keys, err := newAES(key)
		if err != nil || keys == nil {
			t.Fatalf("newAES: %v, %v", keys, err)
		}
		got := make([]byte, 8*groups+1)
		got[8*groups] = 0x5a // past the end: untouched
		decryptGroups8(keys, &win[0], &got[0], groups)
		for k := range 8 * groups {
			var ks [16]byte
			block.Encrypt(ks[:], win[k:k+16])
			if want := win[16+k] ^ ks[0]; got[k] != want {
				t.Fatalf("key %x, %d groups, byte %d: %02x, crypto/aes gives %02x", key, groups, k, got[k], want)
			}
		}
		if got[8*groups] != 0x5a {
			t.Fatalf("%d groups: the byte after them was written", groups)
		}
	}
	enc, dec, err := NewConnCiphers([]byte("0123456789abcdef"))
	if err != nil || enc.keys == nil || enc.keys != dec.keys {
		t.Fatalf("NewConnCiphers does not share kernel round keys: %p %p %v", enc.keys, dec.keys, err)
	}
}

func TestNewConnCiphers(t *testing.T) {
	if _, _, err := NewConnCiphers(make([]byte, 15)); err == nil {
		t.Fatal("a 15-byte secret was taken")
	}
	secret := []byte("0123456789abcdef")
	enc, dec, err := NewConnCiphers(secret)
	if err != nil {
		t.Fatal(err)
	}
	if enc.Decrypting() || !dec.Decrypting() {
		t.Fatalf("Decrypting: encrypter %v, decrypter %v", enc.Decrypting(), dec.Decrypting())
	}
	msg := []byte("a play packet crossing the proxy, long enough to wrap the ring of the register twice over........")
	buf := append([]byte(nil), msg...)
	enc.XORKeyStream(buf, buf)
	if bytes.Equal(buf, msg) {
		t.Fatal("encryption left the bytes as they were")
	}
	dec.XORKeyStream(buf, buf)
	if !bytes.Equal(buf, msg) {
		t.Fatalf("round trip: %q", buf)
	}
	// Streams resumed from the registers go on where the first stopped.
	block, _ := aes.NewCipher(secret)
	reg := enc.Register()
	resumed := NewCFB8Encrypter(block, reg[:])
	a, b := append([]byte(nil), msg...), append([]byte(nil), msg...)
	enc.XORKeyStream(a, a)
	resumed.XORKeyStream(b, b)
	if !bytes.Equal(a, b) {
		t.Fatal("a stream resumed from Register differs")
	}
	// Both directions resumed as a live upgrade does, once dec has caught
	// up with enc (both have seen msg twice).
	dec.XORKeyStream(a, a)
	enc2, dec2, err := ResumeConnCiphers(secret, enc.Register(), dec.Register())
	if err != nil {
		t.Fatal(err)
	}
	c1, c2 := append([]byte(nil), msg...), append([]byte(nil), msg...)
	enc.XORKeyStream(c1, c1)
	enc2.XORKeyStream(c2, c2)
	if !bytes.Equal(c1, c2) {
		t.Fatal("a resumed encrypter's output differs from the original's")
	}
	dec2.XORKeyStream(c1, c1)
	if !bytes.Equal(c1, msg) {
		t.Fatalf("the resumed decrypter reads %q", c1)
	}
	if _, _, err := ResumeConnCiphers(secret[:8], [16]byte{}, [16]byte{}); err == nil {
		t.Fatal("an 8-byte secret was taken")
	}
}

// newTestCFB8 is a CFB8 of any key and IV, with the AES-NI kernels
// (where they run) when kernels is set, as NewConnCiphers makes them.
func newTestCFB8(t testing.TB, key, iv []byte, decrypt, kernels bool) *CFB8 {
	block, keys, err := newAES(key)
	if err != nil {
		t.Fatal(err)
	}
	x := NewCFB8Encrypter(block, iv)
	if decrypt {
		x = NewCFB8Decrypter(block, iv)
	}
	if kernels {
		x.keys = keys
	}
	return x
}

// checkCFB8AgainstGoMC runs the same chunks through ours (with and
// without the kernels) and go-mc's net/CFB8 and fails t on any difference.
func checkCFB8AgainstGoMC(t *testing.T, key, iv, data []byte, cuts []int, decrypt, inPlace bool) {
	t.Helper()
	for _, kernels := range []bool{false, true} {
		checkCFB8Once(t, key, iv, data, cuts, decrypt, inPlace, kernels)
	}
}

func checkCFB8Once(t *testing.T, key, iv, data []byte, cuts []int, decrypt, inPlace, kernels bool) {
	t.Helper()
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	var ours, theirs cipher.Stream = newTestCFB8(t, key, iv, decrypt, kernels), gomccfb8.NewCFB8Encrypt(block, iv)
	if decrypt {
		theirs = gomccfb8.NewCFB8Decrypt(block, iv)
	}
	got := append([]byte(nil), data...)
	want := make([]byte, len(data))
	at := 0
	for _, c := range append(cuts, len(data)) {
		if c < at || c > len(data) {
			continue
		}
		if inPlace {
			ours.XORKeyStream(got[at:c], got[at:c])
		} else {
			ours.XORKeyStream(got[at:c], data[at:c])
		}
		theirs.XORKeyStream(want[at:c], data[at:c])
		at = c
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("decrypt %v, in place %v, kernels %v, cuts %v: ours %x, go-mc %x", decrypt, inPlace, kernels, cuts, got, want)
	}
}

func TestCFB8MatchesGoMC(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		key, iv := make([]byte, 16), make([]byte, 16)
		for i := range key {
			key[i], iv[i] = byte(rng.Uint32()), byte(rng.Uint32())
		}
		data := make([]byte, rng.IntN(700))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		var cuts []int
		for c := 0; c < len(data); c += 1 + rng.IntN(90) {
			cuts = append(cuts, c)
		}
		for _, dec := range []bool{false, true} {
			for _, inPlace := range []bool{false, true} {
				checkCFB8AgainstGoMC(t, key, iv, data, cuts, dec, inPlace)
			}
		}
	}
}

func FuzzCFB8(f *testing.F) {
	f.Add([]byte("0123456789abcdef"), []byte("fedcba9876543210"), []byte("hello"), uint8(3), false, false)
	f.Add(make([]byte, 16), make([]byte, 16), make([]byte, 300), uint8(17), true, true)
	f.Add([]byte("0123456789abcdef"), make([]byte, 16), bytes.Repeat([]byte{0xa5}, 129), uint8(0), true, false)
	f.Fuzz(func(t *testing.T, key, iv, data []byte, step uint8, decrypt, inPlace bool) {
		if len(key) != 16 || len(iv) != 16 {
			return
		}
		var cuts []int
		if step > 0 {
			for c := int(step); c < len(data); c += int(step) {
				cuts = append(cuts, c)
			}
		}
		checkCFB8AgainstGoMC(t, key, iv, data, cuts, decrypt, inPlace)
	})
}

func TestCFB8ZeroAllocs(t *testing.T) {
	enc, dec, err := NewConnCiphers([]byte("0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	key := []byte("0123456789abcdef")
	plainEnc, plainDec := newTestCFB8(t, key, key, false, false), newTestCFB8(t, key, key, true, false)
	buf := make([]byte, 1500)
	for name, f := range map[string]func(){
		"encrypt":          func() { enc.XORKeyStream(buf, buf) },
		"decrypt":          func() { dec.XORKeyStream(buf, buf) },
		"encrypt by Block": func() { plainEnc.XORKeyStream(buf, buf) },
		"decrypt by Block": func() { plainDec.XORKeyStream(buf, buf) },
		"decrypt bytewise": func() {
			dec.xorBytewise(buf, buf)
		},
	} {
		if a := testing.AllocsPerRun(50, f); a != 0 {
			t.Errorf("%s: %v allocs per run, want 0", name, a)
		}
	}
}

// benchCFB8 measures one direction in place on 1 KiB chunks (a typical
// play packet batch); run selects the implementation. Besides the wall
// clock it reports the process's CPU time per operation and the MB/s it
// makes, which other work on a shared machine inflates far less.
func benchCFB8(b *testing.B, run func(buf []byte)) {
	buf := make([]byte, 1024)
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	start := processCPU(b)
	for b.Loop() {
		run(buf)
	}
	cpu := processCPU(b) - start
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(len(buf))*float64(b.N)/cpu.Seconds()/1e6, "cpu-MB/s")
}

// processCPU is the process's user and system CPU time so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkCFB8(b *testing.B) {
	key := []byte("0123456789abcdef")
	block, _ := aes.NewCipher(key)
	enc, dec := NewCFB8Encrypter(block, key), NewCFB8Decrypter(block, key)
	b.Run("encrypt", func(b *testing.B) { benchCFB8(b, func(p []byte) { enc.XORKeyStream(p, p) }) })
	b.Run("decrypt", func(b *testing.B) { benchCFB8(b, func(p []byte) { dec.XORKeyStream(p, p) }) })
	b.Run("decrypt-bytewise", func(b *testing.B) { benchCFB8(b, func(p []byte) { dec.xorBytewise(p, p) }) })
	kEnc, kDec, _ := NewConnCiphers(key)
	b.Run("kernel-encrypt", func(b *testing.B) { benchCFB8(b, func(p []byte) { kEnc.XORKeyStream(p, p) }) })
	b.Run("kernel-decrypt", func(b *testing.B) { benchCFB8(b, func(p []byte) { kDec.XORKeyStream(p, p) }) })
	gEnc, gDec := gomccfb8.NewCFB8Encrypt(block, key), gomccfb8.NewCFB8Decrypt(block, key)
	b.Run("gomc-encrypt", func(b *testing.B) { benchCFB8(b, func(p []byte) { gEnc.XORKeyStream(p, p) }) })
	b.Run("gomc-decrypt", func(b *testing.B) { benchCFB8(b, func(p []byte) { gDec.XORKeyStream(p, p) }) })
	// go-mc's fast path needs distinct buffers.
	out := make([]byte, 1024)
	b.Run("gomc-decrypt-disjoint", func(b *testing.B) { benchCFB8(b, func(p []byte) { gDec.XORKeyStream(out, p) }) })
	b.Run("decrypt-disjoint", func(b *testing.B) { benchCFB8(b, func(p []byte) { dec.XORKeyStream(out, p) }) })
}
