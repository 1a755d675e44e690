package mcbackend

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/reactor"
)

// Defaults for Config fields left at their zero value.
const (
	DefaultLoginTimeout        = 10 * time.Second
	DefaultSlowRate            = 64 << 10
	DefaultMaxFrameLength      = mc.MaxFrameLength
	DefaultMaxLoginFrameLength = 32 << 10
)

// SlowSinkMode selects how the backend reads a connection once it is in play.
type SlowSinkMode uint8

const (
	// SlowSinkNone reads as fast as the client sends and its echo drains.
	SlowSinkNone SlowSinkMode = iota
	// SlowSinkSlow consumes at most Config.SlowRate bytes per second.
	SlowSinkSlow
	// SlowSinkStall stops reading for good once play begins.
	SlowSinkStall
)

// String returns the mode's flag spelling: none, slow or stall.
func (m SlowSinkMode) String() string {
	switch m {
	case SlowSinkNone:
		return "none"
	case SlowSinkSlow:
		return "slow"
	case SlowSinkStall:
		return "stall"
	}
	return "slow-sink(" + strconv.Itoa(int(m)) + ")"
}

// ParseSlowSinkMode parses a --slow-sink value: none, slow or stall.
func ParseSlowSinkMode(s string) (SlowSinkMode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "none":
		return SlowSinkNone, nil
	case "slow":
		return SlowSinkSlow, nil
	case "stall":
		return SlowSinkStall, nil
	}
	return 0, fmt.Errorf("slow-sink mode %q: want none, slow or stall", s)
}

// ParseByteSize parses a byte count such as "65536", "64KiB", "64k", "1MiB"
// or "2m": a non-negative integer with an optional binary suffix (k/KiB,
// m/MiB, g/GiB, case-insensitive; KB, MB and GB are read as binary too).
func ParseByteSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		suffixes []string
		mult     int64
	}{
		{[]string{"kib", "kb", "k"}, 1 << 10},
		{[]string{"mib", "mb", "m"}, 1 << 20},
		{[]string{"gib", "gb", "g"}, 1 << 30},
		{[]string{"b"}, 1},
	} {
		found := false
		for _, suf := range u.suffixes {
			if strings.HasSuffix(t, suf) {
				t, mult, found = strings.TrimSpace(strings.TrimSuffix(t, suf)), u.mult, true
				break
			}
		}
		if found {
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("byte size %q: want a non-negative integer with an optional KiB, MiB or GiB suffix", s)
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("byte size %q is too large", s)
	}
	return n * mult, nil
}

// Config holds the options of a Server. The zero value of each field selects
// its default; New fills them in and reports values that cannot work.
type Config struct {
	// Reactor configures the listener and loops; its Logger is the backend's logger.
	Reactor reactor.Config

	// Compression makes the backend send Set Compression during login (to
	// clients of protocol 47, Minecraft 1.8, and later), after which both
	// directions use the compressed framing.
	Compression bool
	// CompressionThreshold is the packet size (packet ID and data) from which
	// the backend's own packets are zlib-compressed when Compression is on; 0
	// compresses every packet.
	CompressionThreshold int

	// SlowSink selects how play input is read.
	SlowSink SlowSinkMode
	// SlowRate is the most bytes per second consumed in SlowSinkSlow mode.
	SlowRate int

	// ReplyDelay, when positive, holds every play echo this long before
	// writing it, in order, as a link with that one-way delay would: the
	// user-space stand-in for netem that the session benchmark's --app-rtt
	// uses. Login and status replies are not held. It requires SlowSink
	// none.
	ReplyDelay time.Duration

	// ChunkReplies answers a chunk request (a play frame of packet ID
	// ChunkRequestPacketID, see AppendChunkRequest) with one frame of the
	// size it asks for instead of its echo, as a server sends chunk data:
	// the session benchmark's players workload. Only connections without
	// compression are answered so; every other frame is echoed as without it.
	ChunkReplies bool

	// MaxFrameLength bounds the body of one play frame (1..mc.MaxFrameLength).
	MaxFrameLength int
	// MaxLoginFrameLength bounds the body of a frame, and the inflated size of
	// a compressed packet, before play begins.
	MaxLoginFrameLength int
	// LoginTimeout bounds the time from accept until play begins (or, for
	// status connections, until the ping is answered).
	LoginTimeout time.Duration
	// SkipJoinGame turns off the Login (play) packet sent to protocol 764 and
	// 765 clients when play begins, for clients that want the echo only.
	SkipJoinGame bool
	// JoinGameDelay, when positive, holds that Login (play) packet this
	// long after play begins, as a server that sends it on its next tick:
	// Gate v0.56.2 switches its backend connection to its transition
	// handler only after it forwarded the configuration's
	// acknowledgement, and a Login (play) that comes back before loses
	// the player (the benchmarks' --join-delay).
	JoinGameDelay time.Duration

	// StatusProtocol is the protocol number the status JSON announces, as
	// a real server announces its own; 0 means each client's own (764 to a
	// ping that names none, with -1).
	StatusProtocol int32
	// StatusDescription is the status JSON's description text; empty
	// means DefaultStatusDescription.
	StatusDescription string

	// Forwarding is what the backend expects of a proxy in front of it
	// (see Forwarding); a login without it is refused with the disconnect
	// Spigot or Paper sends, and counted as bad_forwarding.
	Forwarding Forwarding
	// ForwardingSecret is the velocity forwarding secret (Velocity's
	// forwarding.secret); required with ForwardVelocity.
	ForwardingSecret []byte
}

// normalize fills in defaults and validates the configuration; the reactor
// part is validated by reactor.NewServer.
func (c *Config) normalize() error {
	if c.SlowRate == 0 {
		c.SlowRate = DefaultSlowRate
	}
	if c.MaxFrameLength == 0 {
		c.MaxFrameLength = DefaultMaxFrameLength
	}
	if c.MaxLoginFrameLength == 0 {
		c.MaxLoginFrameLength = DefaultMaxLoginFrameLength
	}
	if c.LoginTimeout == 0 {
		c.LoginTimeout = DefaultLoginTimeout
	}
	if c.StatusDescription == "" {
		c.StatusDescription = DefaultStatusDescription
	}
	var errs []error
	if c.Forwarding == ForwardVelocity && len(c.ForwardingSecret) == 0 {
		errs = append(errs, errors.New("velocity forwarding needs a secret"))
	}
	if c.Forwarding > ForwardVelocity {
		errs = append(errs, fmt.Errorf("forwarding %d: want ForwardNone, ForwardBungeeCord or ForwardVelocity", c.Forwarding))
	}
	if c.Compression && (c.CompressionThreshold < 0 || c.CompressionThreshold > mc.MaxFrameLength) {
		errs = append(errs, fmt.Errorf("compression threshold %d: want 0..%d", c.CompressionThreshold, mc.MaxFrameLength))
	}
	if c.SlowSink > SlowSinkStall {
		errs = append(errs, fmt.Errorf("slow-sink mode %d is unknown", c.SlowSink))
	}
	if c.JoinGameDelay < 0 {
		errs = append(errs, fmt.Errorf("join game delay %v is negative", c.JoinGameDelay))
	}
	if c.ReplyDelay < 0 {
		errs = append(errs, fmt.Errorf("reply delay %v is negative", c.ReplyDelay))
	}
	if c.ReplyDelay > 0 && c.SlowSink != SlowSinkNone {
		errs = append(errs, fmt.Errorf("reply delay %v with slow-sink mode %s: a held echo needs slow-sink none", c.ReplyDelay, c.SlowSink))
	}
	if c.SlowRate < 0 {
		errs = append(errs, fmt.Errorf("slow rate %d bytes/s is negative", c.SlowRate))
	}
	if c.MaxFrameLength < 1 || c.MaxFrameLength > mc.MaxFrameLength {
		errs = append(errs, fmt.Errorf("max frame length %d: want 1..%d", c.MaxFrameLength, mc.MaxFrameLength))
	}
	if c.MaxLoginFrameLength < 1 || c.MaxLoginFrameLength > mc.MaxFrameLength {
		errs = append(errs, fmt.Errorf("max login frame length %d: want 1..%d", c.MaxLoginFrameLength, mc.MaxFrameLength))
	}
	if c.LoginTimeout < 0 {
		errs = append(errs, fmt.Errorf("login timeout %v is negative", c.LoginTimeout))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("mcbackend: config: %w", err)
	}
	return nil
}
