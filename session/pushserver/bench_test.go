//go:build linux

package pushserver

import (
	"bytes"
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tidegate/tidegate/protocol/push"
	"github.com/tidegate/tidegate/reactor/writev"
)

// kernelSink is a unix socketpair whose far end a goroutine drains, so that
// every arm of the benchmark pays for the syscall and the kernel's copy.
type kernelSink struct {
	fd  int
	iov []unix.Iovec
}

func newKernelSink(b *testing.B) *kernelSink {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		b.Fatalf("socketpair: %v", err)
	}
	for _, fd := range fds {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4<<20)
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4<<20)
		for {
			n, err := unix.Read(fds[1], buf)
			if n <= 0 && err != unix.EINTR {
				return
			}
		}
	}()
	b.Cleanup(func() {
		unix.Close(fds[0])
		<-done
		unix.Close(fds[1])
	})
	return &kernelSink{fd: fds[0]}
}

// writev writes all of bs with writev calls from a reused iovec array.
func (k *kernelSink) writev(b *testing.B, bs [][]byte) {
	for len(bs) > 0 {
		k.iov = k.iov[:0]
		total := 0
		for _, p := range bs[:min(len(bs), writev.MaxIovecs)] {
			if len(p) == 0 {
				continue
			}
			v := unix.Iovec{Base: &p[0]}
			v.SetLen(len(p))
			k.iov = append(k.iov, v)
			total += len(p)
		}
		if len(k.iov) == 0 {
			return
		}
		r, _, errno := unix.Syscall(unix.SYS_WRITEV, uintptr(k.fd), uintptr(unsafe.Pointer(&k.iov[0])), uintptr(len(k.iov)))
		if errno != 0 {
			if errno == unix.EINTR || errno == unix.EAGAIN {
				continue
			}
			b.Fatalf("writev: %v", errno)
		}
		n := int(r)
		for len(bs) > 0 && n >= len(bs[0]) {
			n -= len(bs[0])
			bs = bs[1:]
		}
		if n > 0 {
			bs[0] = bs[0][n:]
		}
	}
}

// copyLegacy is the pre-wrap path: one fresh array of the batch's total size,
// everything copied in.
func copyLegacy(topic []byte, ds []*delivery, eventBytes int) []byte {
	out := make([]byte, push.FrameHeaderLen(len(topic))+eventBytes)
	push.PutFrameHeader(out, topic, eventBytes)
	off := push.FrameHeaderLen(len(topic))
	for _, d := range ds {
		for i := range d.events {
			off += copy(out[off:], d.events[i].wire)
		}
	}
	return out
}

func copySSE(ds []*delivery) []byte {
	n := 0
	for _, d := range ds {
		for i := range d.events {
			n += len(sseDataPrefix) + len(d.events[i].payload()) + len(sseEventEnd)
		}
	}
	out := make([]byte, 0, n)
	for _, d := range ds {
		for i := range d.events {
			out = append(out, sseDataPrefix...)
			out = append(out, d.events[i].payload()...)
			out = append(out, sseEventEnd...)
		}
	}
	return out
}

// wrapLegacy references every component: the header and each event.
func wrapLegacy(iov [][]byte, hdr, topic []byte, ds []*delivery, eventBytes int) [][]byte {
	push.PutFrameHeader(hdr, topic, eventBytes)
	iov = append(iov, hdr)
	for _, d := range ds {
		for i := range d.events {
			iov = append(iov, d.events[i].wire)
		}
	}
	return iov
}

// wrapSSE references three components per event: prefix, payload, suffix.
func wrapSSE(iov [][]byte, ds []*delivery) [][]byte {
	for _, d := range ds {
		for i := range d.events {
			iov = append(iov, sseDataPrefix, d.events[i].payload(), sseEventEnd)
		}
	}
	return iov
}

// BenchmarkBatchWrite reproduces the design doc's table: 30 events per
// batch, bare (legacy TCP framing) and delimited (SSE), written to a kernel
// sink by the copy, wrap+gather and adaptive (writev.Batch) arms.
func BenchmarkBatchWrite(b *testing.B) {
	const events = 30
	topic := []byte("bench")
	for _, shape := range []string{"bare", "delimited"} {
		for _, size := range []int{128, 256, 512, 1024, 2048, 4096, 16384} {
			payloads := make([][]byte, events)
			for i := range payloads {
				payloads[i] = bytes.Repeat([]byte{'a' + byte(i%26)}, size)
			}
			ds, eventBytes := makeDeliveries(b, [][][]byte{payloads})
			var want []byte
			if shape == "bare" {
				want = copyLegacy(topic, ds, eventBytes)
			} else {
				want = copySSE(ds)
			}
			// The arms must agree byte for byte before anything is timed.
			hdr := make([]byte, push.FrameHeaderLen(len(topic)))
			var wrapped [][]byte
			var batch writev.Batch
			if shape == "bare" {
				wrapped = wrapLegacy(nil, hdr, topic, ds, eventBytes)
				appendLegacyBatch(&batch, topic, 0, ds, math.MaxInt, eventBytes, false)
			} else {
				wrapped = wrapSSE(nil, ds)
				appendSSEBatch(&batch, 0, ds, math.MaxInt, false)
			}
			if !bytes.Equal(bytes.Join(wrapped, nil), want) || !bytes.Equal(bytes.Join(batch.Bytes(), nil), want) {
				b.Fatalf("%s/%d: arms disagree", shape, size)
			}
			segments := map[string]int{"copy": 1, "wrap+gather": len(wrapped), "adaptive": batch.Segments()}
			batch.Reset()
			for _, arm := range []string{"copy", "wrap+gather", "adaptive"} {
				b.Run(fmt.Sprintf("%s/%d/%s", shape, size, arm), func(b *testing.B) {
					sink := newKernelSink(b)
					b.SetBytes(int64(len(want)))
					b.ReportAllocs()
					one := make([][]byte, 1)
					iov := make([][]byte, 0, 3*events+1)
					var batch writev.Batch
					// Wall time includes waiting for the drain goroutine on a
					// loaded machine; the thread's CPU time does not.
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					cpu0 := threadCPU(b)
					for b.Loop() {
						switch arm {
						case "copy":
							if shape == "bare" {
								one[0] = copyLegacy(topic, ds, eventBytes)
							} else {
								one[0] = copySSE(ds)
							}
							sink.writev(b, one)
						case "wrap+gather":
							if shape == "bare" {
								iov = wrapLegacy(iov[:0], hdr, topic, ds, eventBytes)
							} else {
								iov = wrapSSE(iov[:0], ds)
							}
							sink.writev(b, iov)
						case "adaptive":
							if shape == "bare" {
								appendLegacyBatch(&batch, topic, 0, ds, math.MaxInt, eventBytes, false)
							} else {
								appendSSEBatch(&batch, 0, ds, math.MaxInt, false)
							}
							sink.writev(b, batch.Bytes())
							batch.Reset()
						}
					}
					b.ReportMetric(float64(threadCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
					b.ReportMetric(float64(segments[arm]), "iovecs/op")
				})
			}
		}
	}
}

// threadCPU returns the calling thread's CPU time.
func threadCPU(b *testing.B) time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		b.Fatalf("clock_gettime: %v", err)
	}
	return time.Duration(ts.Nano())
}
