package inspect

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/zlib"

	"github.com/tidegate/tidegate/protocol/mc"
)

// idReader reads packet IDs; its zlib reader is reset, not made, per
// frame. The zero value is ready.
type idReader struct {
	zr  io.ReadCloser
	src bytes.Reader
	out [5]byte
}

// read returns the packet ID at the start of body, a frame's body (all of
// it when complete, else as much as has come) in a stream compressed at
// threshold (-1: not compressed): only the ID's bytes of a deflated
// packet are inflated. ok is false when the ID is not all in an
// incomplete body yet.
func (r *idReader) read(body []byte, threshold int, complete bool) (id int32, ok bool, err error) {
	if threshold >= 0 {
		size, n, err := mc.ReadVarInt(body)
		switch {
		case err != nil:
			return 0, false, fmt.Errorf("data length: %w", err)
		case n == 0:
			return 0, false, r.short(complete, "data length")
		case size < 0 || size > mc.MaxClientboundUncompressed:
			return 0, false, fmt.Errorf("data length %d: want 0..%d: %w", size, mc.MaxClientboundUncompressed, mc.ErrInflateTooLarge)
		case size > 0:
			return r.inflated(body[n:], complete)
		}
		body = body[n:]
	}
	id, n, err := mc.ReadVarInt(body)
	switch {
	case err != nil:
		return 0, false, fmt.Errorf("packet ID: %w", err)
	case n == 0:
		return 0, false, r.short(complete, "packet ID")
	}
	return id, true, nil
}

// short is the error for a field cut by the end of the body: none while
// more may come.
func (r *idReader) short(complete bool, field string) error {
	if !complete {
		return nil
	}
	return errors.New("the frame ends inside its " + field)
}

// inflated reads the packet ID at the start of the zlib stream z.
func (r *idReader) inflated(z []byte, complete bool) (int32, bool, error) {
	r.src.Reset(z)
	var err error
	if r.zr == nil {
		r.zr, err = zlib.NewReader(&r.src)
	} else {
		err = r.zr.(zlib.Resetter).Reset(&r.src, nil)
	}
	got := 0
	for err == nil && got < len(r.out) {
		if _, n, _ := mc.ReadVarInt(r.out[:got]); n > 0 {
			break
		}
		var k int
		k, err = r.zr.Read(r.out[got:])
		got += k
	}
	id, n, verr := mc.ReadVarInt(r.out[:got])
	switch {
	case verr != nil:
		return 0, false, fmt.Errorf("packet ID: %w", verr)
	case n > 0:
		return id, true, nil
	case !complete && (err == nil || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)):
		return 0, false, nil // more of the stream is to come
	}
	return 0, false, fmt.Errorf("zlib stream before the packet ID: %w", errors.Join(err, io.ErrUnexpectedEOF))
}
