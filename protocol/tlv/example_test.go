package tlv_test

import (
	"errors"
	"fmt"

	"github.com/tidegate/tidegate/protocol/tlv"
)

func ExampleFormat_Decode() {
	f := tlv.DefaultFormat // 1-byte type, 4-byte length

	// Two frames, the second one not fully received yet.
	var in []byte
	in = f.AppendFrame(in, tlv.Header{Type: 1, KeepAlive: true}, []byte("ping"))
	in = f.AppendFrame(in, tlv.Header{Type: 2}, []byte("hello"))
	in = in[:len(in)-2]

	for {
		h, n, err := f.Decode(in)
		if err != nil {
			fmt.Println("close connection:", err)
			return
		}
		if n == 0 || n > len(in) {
			fmt.Printf("need more bytes (have %d, frame needs %d)\n", len(in), n)
			break
		}
		if err := f.CheckRequest(h); err != nil {
			fmt.Println("close connection:", err)
			return
		}
		body := in[f.HeaderLen():n]
		fmt.Printf("type=%d keep-alive=%v body=%q\n", h.Type, h.KeepAlive, body)
		in = in[n:]
	}

	// A header announcing more than MaxBody is rejected without waiting
	// for (or allocating) the body.
	_, _, err := f.Decode([]byte{0x01, 0x00, 0x4C, 0x4B, 0x40})
	fmt.Println(err)

	// Output:
	// type=1 keep-alive=true body="ping"
	// need more bytes (have 8, frame needs 10)
	// tlv: body length 5000000 exceeds maximum 1048576
}

func ExampleEncoder() {
	f := tlv.Format{TypeWidth: 1, LengthWidth: 2, MaxBody: 1024}
	e, err := f.Encoder() // the Format checked once
	if err != nil {
		fmt.Println(err)
		return
	}

	// The header of each response, written into its place in a buffer.
	out := make([]byte, 0, 64)
	for _, body := range []string{"ok", "hello"} {
		if out, err = e.AppendHeader(out, tlv.Header{Type: 2, KeepAlive: true, Length: len(body)}); err != nil {
			fmt.Println(err)
			return
		}
		out = append(out, body...)
	}
	fmt.Printf("% x\n", out)

	// A header the Format cannot carry is an error, and nothing is written.
	_, err = e.AppendHeader(out, tlv.Header{Type: 2, Length: 70000})
	fmt.Println(err, errors.Is(err, tlv.ErrHeaderRange))

	// Output:
	// 82 00 02 6f 6b 82 00 05 68 65 6c 6c 6f
	// tlv: header field out of range: body length 70000 out of range for the 2-byte length field (max 65535) true
}
