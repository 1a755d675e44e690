package tlv_test

import (
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
