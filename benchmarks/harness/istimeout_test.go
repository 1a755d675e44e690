package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"
)

func TestIsTimeoutTellsDeadlinesFromOtherErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(-time.Second))
	_, readErr := c.Read(make([]byte, 1))
	for _, err := range []error{readErr, os.ErrDeadlineExceeded, fmt.Errorf("step: %w", context.DeadlineExceeded)} {
		if !IsTimeout(err) {
			t.Errorf("IsTimeout(%v) = false, want true", err)
		}
	}
	for _, err := range []error{nil, errors.New("connection refused"), context.Canceled} {
		if IsTimeout(err) {
			t.Errorf("IsTimeout(%v) = true, want false", err)
		}
	}
}
