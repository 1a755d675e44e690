package upgradeload

import (
	"net"

	"github.com/tidegate/tidegate/benchmarks/echo"
)

// startEcho starts the proxy's backend on a free loopback port: an echo
// server in this process, one goroutine per connection with each session's
// read buffer, that serves each connection with serve (echo when nil).
func startEcho(serve func(net.Conn)) (*echo.Server, error) {
	s := &echo.Server{Handle: serve, BufferSize: readBuf}
	if err := s.Start("127.0.0.1:0"); err != nil {
		return nil, err
	}
	return s, nil
}
