package handoverwire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/tidegate/tidegate/internal/testkit/fdlimit"
	"github.com/tidegate/tidegate/internal/testkit/leaktest"
)

// pair returns the two ends of a hand-over socket, closed when the test ends.
func pair(t *testing.T) (send, recv *Conn) {
	t.Helper()
	var other *os.File
	var err error
	if send, other, err = NewPair(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { send.Close() })
	defer other.Close()
	if recv, err = FromFile(other); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { recv.Close() })
	return send, recv
}

// pipe returns the two ends of a pipe, closed when the test ends.
func pipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// TestMessagesCarryPayloadAndFiles: a message arrives whole with the
// descriptors sent with it, each one a working copy of the sent file, and
// the end of the sender's messages reads as io.EOF.
func TestMessagesCarryPayloadAndFiles(t *testing.T) {
	send, recv := pair(t)
	r, w := pipe(t)
	big := bytes.Repeat([]byte("x"), 1<<20) // more than one write's worth
	go func() {
		_ = send.Send([]byte("first"), w)
		_ = send.Send(big)
		_ = send.CloseWrite()
	}()
	payload, files, err := recv.Recv()
	if err != nil || string(payload) != "first" || len(files) != 1 {
		t.Fatalf("Recv: %q, %d files, %v; want \"first\" with 1 file", payload, len(files), err)
	}
	if _, err := files[0].Write([]byte("via copy")); err != nil {
		t.Fatal(err)
	}
	files[0].Close()
	got := make([]byte, len("via copy"))
	if _, err := io.ReadFull(r, got); err != nil || string(got) != "via copy" {
		t.Fatalf("the received descriptor is not the pipe: read %q, %v", got, err)
	}
	payload, files, err = recv.Recv()
	if err != nil || !bytes.Equal(payload, big) || len(files) != 0 {
		t.Fatalf("second Recv: %d bytes, %d files, %v; want %d bytes", len(payload), len(files), err, len(big))
	}
	if _, _, err := recv.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("Recv after CloseWrite: %v, want io.EOF", err)
	}
}

// TestSendRefusesOverTheBounds: a message with more descriptors than the
// receiver's buffer holds is refused before anything is written.
func TestSendRefusesOverTheBounds(t *testing.T) {
	send, _ := pair(t)
	files := make([]*os.File, maxFiles+1)
	if err := send.Send(nil, files...); err == nil || !strings.Contains(err.Error(), "over the bounds") {
		t.Fatalf("Send with %d files: %v, want an error over the bounds", len(files), err)
	}
}

// TestRecvAtTheDescriptorLimit: a message whose descriptors the kernel
// drops on receipt (this process at its descriptor limit: MSG_CTRUNC)
// comes with ErrFilesDropped, its payload and no files, whether none or
// some of them arrived; those that did are closed, and the next message
// arrives whole with its own.
func TestRecvAtTheDescriptorLimit(t *testing.T) {
	for _, free := range []int{0, 1} {
		t.Run(fmt.Sprintf("%d free", free), func(t *testing.T) {
			send, recv := pair(t)
			r, w := pipe(t)
			for _, p := range []string{"dropped", "whole"} {
				if err := send.Send([]byte(p), r, w); err != nil {
					t.Fatal(err)
				}
			}
			open := leaktest.OpenFDs()
			restore := fdlimit.Free(t, free)
			payload, files, err := recv.Recv()
			restore()
			if !errors.Is(err, ErrFilesDropped) || string(payload) != "dropped" || files != nil {
				t.Fatalf("Recv at the limit: %q, %d files, %v; want \"dropped\", no files and ErrFilesDropped", payload, len(files), err)
			}
			if now := leaktest.OpenFDs(); now != open {
				t.Fatalf("%d descriptors open after a message whose descriptors were dropped, %d before", now, open)
			}
			payload, files, err = recv.Recv()
			if err != nil || string(payload) != "whole" || len(files) != 2 {
				t.Fatalf("Recv after the limit: %q, %d files, %v; want \"whole\" with 2", payload, len(files), err)
			}
			closeFiles(files)
		})
	}
}
