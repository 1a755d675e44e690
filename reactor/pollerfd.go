package reactor

import (
	"fmt"
	"reflect"

	"github.com/panjf2000/gnet/v2"
)

// pollerFD returns the epoll or kqueue descriptor of a gnet event loop. gnet
// does not export it; it is the field fd of eventloop.poller (*netpoll.Poller)
// in v2.9.7, for both pollers. Reading unexported fields with reflect is
// allowed; the test TestPollerFD fails if the path changes in another version.
func pollerFD(el gnet.EventLoop) (int, error) {
	return loopPollerFD(reflect.ValueOf(el))
}

// loopPollerFD is pollerFD for a reflected *eventloop, which is also what
// the engine's load balancer holds.
func loopPollerFD(v reflect.Value) (int, error) {
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return -1, fmt.Errorf("reactor: gnet event loop is %s, not a pointer to a struct", v.Type())
	}
	p := v.Elem().FieldByName("poller")
	if !p.IsValid() || p.Kind() != reflect.Pointer || p.IsNil() {
		return -1, fmt.Errorf("reactor: gnet event loop %s has no poller pointer field", v.Type())
	}
	fd := p.Elem().FieldByName("fd")
	if !fd.IsValid() || fd.Kind() != reflect.Int {
		return -1, fmt.Errorf("reactor: gnet poller %s has no int field fd", p.Type())
	}
	return int(fd.Int()), nil
}

// enginePollerFDs returns the poller descriptor of every event loop of a
// booted engine, in gnet's order. In v2.9.7 the loops are the field
// eventLoops ([]*eventloop) of the load balancer (an interface) in the field
// eventLoops of Engine.eng; Start checks them all before it accepts, so a
// gnet whose internals moved refuses to start rather than running without
// flow control. A variable so that a test can make the lookup fail.
var enginePollerFDs = func(eng gnet.Engine) ([]int, error) {
	e := reflect.ValueOf(eng).FieldByName("eng")
	if !e.IsValid() || e.Kind() != reflect.Pointer || e.IsNil() || e.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("reactor: gnet.Engine has no engine pointer field eng")
	}
	lb := e.Elem().FieldByName("eventLoops")
	if !lb.IsValid() || lb.Kind() != reflect.Interface || lb.IsNil() {
		return nil, fmt.Errorf("reactor: gnet engine %s has no load balancer field eventLoops", e.Type())
	}
	lbv := lb.Elem()
	if lbv.Kind() != reflect.Pointer || lbv.IsNil() || lbv.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("reactor: gnet load balancer is %s, not a pointer to a struct", lbv.Type())
	}
	loops := lbv.Elem().FieldByName("eventLoops")
	if !loops.IsValid() || loops.Kind() != reflect.Slice {
		return nil, fmt.Errorf("reactor: gnet load balancer %s has no slice field eventLoops", lbv.Type())
	}
	fds := make([]int, loops.Len())
	for i := range fds {
		fd, err := loopPollerFD(loops.Index(i))
		if err != nil {
			return nil, fmt.Errorf("event loop %d: %w", i, err)
		}
		fds[i] = fd
	}
	return fds, nil
}

// checkPollers finds the poller descriptor of each of the engine's loops and
// checks that it is an epoll (kqueue) instance and that there is one per
// configured loop. An error here means pausing cannot work.
func (s *Server) checkPollers() error {
	fds, err := enginePollerFDs(s.engine)
	if err != nil {
		return fmt.Errorf("reactor: reading gnet's poller descriptors (flow control needs them; is gnet still v2.9.7?): %w", err)
	}
	if len(fds) != s.cfg.Loops {
		return fmt.Errorf("reactor: gnet reports %d event loops, want %d (is gnet still v2.9.7?)", len(fds), s.cfg.Loops)
	}
	for i, fd := range fds {
		if err := checkPollerFD(fd); err != nil {
			return fmt.Errorf("reactor: gnet's poller descriptor %d of event loop %d: %w", fd, i, err)
		}
	}
	return nil
}
