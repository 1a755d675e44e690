//go:build linux

package writev

import (
	"bytes"
	"flag"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/testbytes"

	"golang.org/x/sys/unix"
)

// crossoverSizes overrides the payload sizes of BenchmarkBatchCrossover, to
// look closer around a crossover: go test -bench=BatchCrossover ./reactor/writev/ -args -batch.sizes=384,768
var crossoverSizes = flag.String("batch.sizes", "", "comma-separated payload sizes for BenchmarkBatchCrossover (default 128 to 16384)")

// crossoverEvents is the number of events in one batch of BenchmarkBatchCrossover.
const crossoverEvents = 30

// kernelSink is a descriptor that a benchmark writes batches into, and that
// is drained so that every write makes the kernel copy its bytes.
type kernelSink interface {
	fd() int
	// wrote accounts for n bytes just written.
	wrote(n int)
	// drain makes room for the next chunk of writes; it is not timed.
	drain(tb testing.TB)
}

// pipeSink is a pipe drained by splice into /dev/null between timed chunks:
// writev copies every byte into pipe pages, and the drain only drops page
// references, on the same thread, outside the measurement.
type pipeSink struct {
	r, w, null int
	pending    int
	capacity   int
}

func openPipeSink(tb testing.TB) *pipeSink {
	tb.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		tb.Fatal(err)
	}
	s := &pipeSink{r: p[0], w: p[1], null: -1}
	tb.Cleanup(func() { unix.Close(s.r); unix.Close(s.w); unix.Close(s.null) })
	null, err := unix.Open("/dev/null", unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	s.null = null
	capacity, err := unix.FcntlInt(uintptr(s.w), unix.F_SETPIPE_SZ, pipeSinkSize)
	if err != nil {
		tb.Fatalf("F_SETPIPE_SZ %d: %v", pipeSinkSize, err)
	}
	s.capacity = capacity
	return s
}

// pipeSinkSize is the pipe size asked for; 1 MiB is the default limit for
// unprivileged processes (/proc/sys/fs/pipe-max-size).
const pipeSinkSize = 1 << 20

func (s *pipeSink) fd() int     { return s.w }
func (s *pipeSink) wrote(n int) { s.pending += n }

func (s *pipeSink) drain(tb testing.TB) {
	for s.pending > 0 {
		m, err := unix.Splice(s.r, nil, s.null, nil, s.pending, unix.SPLICE_F_MOVE)
		if err != nil || m <= 0 {
			tb.Fatalf("splice %d bytes to /dev/null: %d, %v", s.pending, m, err)
		}
		s.pending -= int(m)
	}
}

// tcpSink is a blocking loopback TCP connection whose other end a goroutine
// reads and throws away: the write path of a real socket, with a reader that
// competes for the machine's other core.
type tcpSink struct {
	w int
}

func openTCPSink(tb testing.TB) *tcpSink {
	tb.Helper()
	ln, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer unix.Close(ln)
	_ = unix.SetsockoptInt(ln, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
	if err := unix.Bind(ln, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		tb.Fatal(err)
	}
	if err := unix.Listen(ln, 1); err != nil {
		tb.Fatal(err)
	}
	sa, err := unix.Getsockname(ln)
	if err != nil {
		tb.Fatal(err)
	}
	w, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	_ = unix.SetsockoptInt(w, unix.SOL_SOCKET, unix.SO_SNDBUF, 4<<20)
	_ = unix.SetsockoptInt(w, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1) // as gnet sets it
	if err := unix.Connect(w, sa); err != nil {
		tb.Fatal(err)
	}
	r, _, err := unix.Accept4(ln, unix.SOCK_CLOEXEC)
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1<<20)
		for {
			n, err := unix.Read(r, buf)
			if n <= 0 || err != nil {
				return
			}
		}
	}()
	tb.Cleanup(func() {
		_ = unix.Shutdown(w, unix.SHUT_WR)
		<-done
		unix.Close(r)
		unix.Close(w)
	})
	return &tcpSink{w: w}
}

func (s *tcpSink) fd() int          { return s.w }
func (s *tcpSink) wrote(int)        {}
func (s *tcpSink) drain(testing.TB) {}

// writeBatchFD writes b to fd the way reactor.Conn.WriteBatch writes it to
// a connection: one write for a single slice, otherwise one writev from a
// reused iovec array. It returns the bytes written and empties b.
func writeBatchFD(fd int, b *Batch, s *Scratch) (int, error) {
	if b.Len() == 0 {
		return 0, nil
	}
	n, err := s.Write(fd, b.Bytes())
	b.Reset()
	return n, err
}

// crossoverArm is one way of building the benchmark's batch.
type crossoverArm struct {
	name      string
	crossover int
}

var (
	armCopy     = crossoverArm{"copy", 1 << 30} // every piece copied: one slice
	armWrap     = crossoverArm{"wrap", 1}       // every piece its own iovec
	armAdaptive = crossoverArm{"adaptive", 0}   // DefaultCrossover decides
	armSplit    = crossoverArm{"split", 64}     // delimiters copied, payloads referenced
	ssePrefix   = []byte("data: ")
	sseSuffix   = []byte("\n\n")
)

// buildCrossoverBatch adds one batch of events to b: bare, or each event
// delimited as a server-sent event ("data: " + payload + "\n\n", three pieces).
func buildCrossoverBatch(b *Batch, events [][]byte, delimited bool) {
	if !delimited {
		for _, e := range events {
			b.Add(e)
		}
		return
	}
	for _, e := range events {
		b.Add(ssePrefix)
		b.Add(e)
		b.Add(sseSuffix)
	}
}

// BenchmarkBatchCrossover measures, per payload size, building a batch of
// 30 events and writing it with one write or writev into a kernel sink,
// copying every piece, referencing every piece, or as DefaultCrossover
// decides. See benchmarks/results/2026-11-30-batch-crossover.md.
//
// The arms of one size run interleaved, in chunks of a few hundred
// microseconds in rotating order, so that the load of a shared machine falls
// on all of them alike. Each chunk is timed by the CPU time of the writing
// thread (which includes the kernel's work in the write) and by the clock;
// an arm reports the median over its chunks, per batch, as <arm>-cpu-ns/op
// and <arm>-wall-ns/op. b.N counts the batches of each arm.
func BenchmarkBatchCrossover(b *testing.B) {
	sizes := []int{128, 256, 512, 1024, 2048, 4096, 16384}
	if *crossoverSizes != "" {
		sizes = sizes[:0]
		for _, f := range strings.Split(*crossoverSizes, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				b.Fatalf("-batch.sizes: %q is not a positive size", f)
			}
			sizes = append(sizes, n)
		}
	}
	sinks := []struct {
		name string
		open func(testing.TB) kernelSink
	}{
		{"pipe", func(tb testing.TB) kernelSink { return openPipeSink(tb) }},
		{"tcp", func(tb testing.TB) kernelSink { return openTCPSink(tb) }},
	}
	for _, sk := range sinks {
		b.Run("sink="+sk.name, func(b *testing.B) {
			sink := sk.open(b)
			for _, shape := range []string{"bare", "delimited"} {
				delimited := shape == "delimited"
				arms := []crossoverArm{armCopy, armWrap, armAdaptive}
				if delimited {
					arms = append(arms, armSplit)
				}
				for _, size := range sizes {
					// Distinct memory for every event, as events produced one by one have.
					events := make([][]byte, crossoverEvents)
					for i := range events {
						events[i] = testbytes.Patterned(size, uint64(size*100+i))
					}
					b.Run(fmt.Sprintf("%s/size=%d", shape, size), func(b *testing.B) {
						runCrossoverArms(b, sink, events, delimited, arms)
					})
				}
			}
		})
	}
}

// crossoverChunkBytes bounds the bytes one timed chunk writes: it must fit
// the pipe sink, and keeps a chunk to a few hundred microseconds.
const crossoverChunkBytes = 512 << 10

func runCrossoverArms(b *testing.B, sink kernelSink, events [][]byte, delimited bool, arms []crossoverArm) {
	batchBytes := 0
	for _, e := range events {
		batchBytes += len(e)
		if delimited {
			batchBytes += len(ssePrefix) + len(sseSuffix)
		}
	}
	chunk := min(max(crossoverChunkBytes/batchBytes, 1), 64)
	type armRun struct {
		arm       crossoverArm
		batch     *Batch
		cpu, wall []float64 // per chunk, ns per batch
	}
	runs := make([]armRun, len(arms))
	for i, a := range arms {
		runs[i] = armRun{arm: a, batch: &Batch{Crossover: a.crossover}}
		checkCrossoverArm(b, runs[i].batch, events, delimited, a)
		runs[i].cpu = make([]float64, 0, b.N/chunk+1)
		runs[i].wall = make([]float64, 0, b.N/chunk+1)
	}
	var scratch Scratch
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	for done, round := 0, 0; done < b.N; done, round = done+chunk, round+1 {
		k := min(chunk, b.N-done)
		for j := range runs {
			r := &runs[(j+round)%len(runs)]
			c0, w0 := threadCPU(b), time.Now()
			for range k {
				buildCrossoverBatch(r.batch, events, delimited)
				n, err := writeBatchFD(sink.fd(), r.batch, &scratch)
				if err != nil || n != batchBytes {
					b.Fatalf("arm %s: wrote %d of %d bytes: %v", r.arm.name, n, batchBytes, err)
				}
				sink.wrote(n)
			}
			c1, w1 := threadCPU(b), time.Now()
			r.cpu = append(r.cpu, float64(c1-c0)/float64(k))
			r.wall = append(r.wall, float64(w1.Sub(w0))/float64(k))
			sink.drain(b)
		}
	}
	b.StopTimer()
	b.ReportMetric(0, "ns/op") // the sum over arms means nothing
	for _, r := range runs {
		b.ReportMetric(median(r.cpu), r.arm.name+"-cpu-ns/op")
		b.ReportMetric(median(r.wall), r.arm.name+"-wall-ns/op")
	}
}

// threadCPU returns the CPU time the calling thread has used, in nanoseconds.
func threadCPU(tb testing.TB) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		tb.Fatalf("clock_gettime(CLOCK_THREAD_CPUTIME_ID): %v", err)
	}
	return ts.Nano()
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// checkCrossoverArm asserts, before anything is measured, that the arm writes
// exactly the concatenation of its pieces, in the number of slices it stands for.
func checkCrossoverArm(b *testing.B, batch *Batch, events [][]byte, delimited bool, arm crossoverArm) {
	b.Helper()
	buildCrossoverBatch(batch, events, delimited)
	var want []byte
	for _, e := range events {
		if delimited {
			want = append(want, ssePrefix...)
		}
		want = append(want, e...)
		if delimited {
			want = append(want, sseSuffix...)
		}
	}
	iov := batch.Bytes()
	if !bytes.Equal(bytes.Join(iov, nil), want) {
		b.Fatalf("arm %s writes other bytes than the concatenation", arm.name)
	}
	pieces := len(events)
	if delimited {
		pieces *= 3
	}
	size := len(events[0])
	var wantSegs int
	switch {
	case arm == armCopy:
		wantSegs = 1
	case arm == armWrap:
		wantSegs = pieces
	case !delimited:
		wantSegs = 1
		if size >= batch.crossover() {
			wantSegs = len(events)
		}
	default: // delimiters copied; payloads referenced from the crossover on
		wantSegs = 1
		if size >= batch.crossover() {
			wantSegs = 2*len(events) + 1
		}
	}
	if len(iov) != wantSegs {
		b.Fatalf("arm %s at %d bytes: %d slices, want %d", arm.name, size, len(iov), wantSegs)
	}
	batch.Reset()
}
