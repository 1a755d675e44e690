package drainload

import (
	"encoding/binary"
	"fmt"
	"net"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sockDiag asks the kernel (NETLINK_SOCK_DIAG) about one TCP socket at a
// time: the server's side of a connection, whose bytes received less its
// receive queue count exactly what the server has read. One query costs a
// few microseconds.
type sockDiag struct {
	fd  int
	req [72]byte
	buf [1024]byte
}

func newSockDiag() (*sockDiag, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return nil, fmt.Errorf("netlink sock_diag socket: %w", err)
	}
	return &sockDiag{fd: fd}, nil
}

func (d *sockDiag) close() { unix.Close(d.fd) }

// Layout of struct nlmsghdr + struct inet_diag_req_v2 (linux/inet_diag.h).
const (
	sockDiagByFamily = 20 // SOCK_DIAG_BY_FAMILY
	diagNoCookie     = ^uint32(0)
	diagMsgRqueue    = unix.SizeofNlMsghdr + 4 + 48 + 4 // offset of idiag_rqueue in the reply
	diagMsgEnd       = unix.SizeofNlMsghdr + 72         // attributes follow struct inet_diag_msg
	diagInfo         = 2                                // INET_DIAG_INFO: the attribute holding struct tcp_info
)

// serverRead is what the server has read of one connection, and what it
// holds received but unread.
type serverRead struct {
	read, queued int64
}

// query returns what the owner of the socket local→remote (both IPv4) has
// read and what waits in its receive queue.
func (d *sockDiag) query(local, remote *net.TCPAddr) (serverRead, error) {
	r := d.req[:]
	ne := binary.NativeEndian
	ne.PutUint32(r[0:], uint32(len(r)))
	ne.PutUint16(r[4:], sockDiagByFamily)
	ne.PutUint16(r[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(r[8:], 1) // seq
	ne.PutUint32(r[12:], 0)
	q := r[unix.SizeofNlMsghdr:]
	q[0], q[1], q[2], q[3] = unix.AF_INET, unix.IPPROTO_TCP, 1<<(diagInfo-1), 0
	ne.PutUint32(q[4:], ^uint32(0)) // every state
	id := q[8:]
	binary.BigEndian.PutUint16(id[0:], uint16(local.Port))
	binary.BigEndian.PutUint16(id[2:], uint16(remote.Port))
	l4, r4 := local.IP.To4(), remote.IP.To4()
	if l4 == nil || r4 == nil {
		return serverRead{}, fmt.Errorf("sock_diag: %v -> %v: IPv4 only", local, remote)
	}
	clear(id[4:40])
	copy(id[4:8], l4)
	copy(id[20:24], r4)
	ne.PutUint32(id[36:], 0) // interface
	ne.PutUint32(id[40:], diagNoCookie)
	ne.PutUint32(id[44:], diagNoCookie)
	if err := unix.Sendto(d.fd, r, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return serverRead{}, fmt.Errorf("sock_diag query %v -> %v: %w", local, remote, err)
	}
	n, _, err := unix.Recvfrom(d.fd, d.buf[:], 0)
	if err != nil {
		return serverRead{}, fmt.Errorf("sock_diag reply %v -> %v: %w", local, remote, err)
	}
	b := d.buf[:n]
	if n < unix.SizeofNlMsghdr {
		return serverRead{}, fmt.Errorf("sock_diag reply of %d bytes", n)
	}
	if t := ne.Uint16(b[4:]); t == unix.NLMSG_ERROR {
		code := int32(0)
		if n >= unix.SizeofNlMsghdr+4 {
			code = int32(ne.Uint32(b[unix.SizeofNlMsghdr:]))
		}
		return serverRead{}, fmt.Errorf("sock_diag %v -> %v: %w", local, remote, unix.Errno(-code))
	}
	if n < diagMsgEnd {
		return serverRead{}, fmt.Errorf("sock_diag reply of %d bytes, want at least %d", n, diagMsgEnd)
	}
	queued := int64(ne.Uint32(b[diagMsgRqueue:]))
	for a := b[diagMsgEnd:]; len(a) >= 4; {
		l, typ := int(ne.Uint16(a[0:])), ne.Uint16(a[2:])
		if l < 4 || l > len(a) {
			break
		}
		if typ == diagInfo {
			info := a[4:l]
			off := int(unsafe.Offsetof(unix.TCPInfo{}.Bytes_received))
			if len(info) < off+8 {
				return serverRead{}, fmt.Errorf("sock_diag: tcp_info of %d bytes has no bytes_received", len(info))
			}
			return serverRead{read: int64(ne.Uint64(info[off:])) - queued, queued: queued}, nil
		}
		a = a[min(len(a), (l+3)&^3):]
	}
	return serverRead{}, fmt.Errorf("sock_diag %v -> %v: no tcp_info in the reply", local, remote)
}
