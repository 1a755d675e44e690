//go:build !linux

package drainload

import (
	"errors"
	"net"
)

var errNotLinux = errors.New("drainload: needs Linux (TCP_INFO, /proc/net/tcp, schedstat)")

func kernelTCPMemory() (int64, error) { return 0, errNotLinux }

func supported() error { return errNotLinux }

type sockDiag struct{}

func newSockDiag() (*sockDiag, error) { return nil, errNotLinux }

func (*sockDiag) close() {}

type serverRead struct{ read, queued int64 }

func (*sockDiag) query(_, _ *net.TCPAddr) (serverRead, error) { return serverRead{}, errNotLinux }

type kernelCounters struct{ MemoryPressures, RcvQDrop, Timeouts int64 }

func readKernelCounters() (kernelCounters, error) { return kernelCounters{}, errNotLinux }

func (c kernelCounters) sub(kernelCounters) kernelCounters { return c }
