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
	v := reflect.ValueOf(el)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return -1, fmt.Errorf("reactor: gnet event loop is %T, not a pointer to a struct", el)
	}
	p := v.Elem().FieldByName("poller")
	if !p.IsValid() || p.Kind() != reflect.Pointer || p.IsNil() {
		return -1, fmt.Errorf("reactor: gnet event loop %T has no poller pointer field", el)
	}
	fd := p.Elem().FieldByName("fd")
	if !fd.IsValid() || fd.Kind() != reflect.Int {
		return -1, fmt.Errorf("reactor: gnet poller %s has no int field fd", p.Type())
	}
	return int(fd.Int()), nil
}
