package config

import (
	"os"
	"reflect"
	"testing"
)

// TestDefaultYAMLStatesProxyProtocolDefaults: default.yaml writes the
// PROXY protocol keys of its listener and group with the values a file
// that leaves them out gets.
func TestDefaultYAMLStatesProxyProtocolDefaults(t *testing.T) {
	d := newDecoder(os.LookupEnv, len(defaultConfigYAML))
	cfg, _, err := parse("default.yaml", defaultConfigYAML, d)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"listeners[0].proxy_protocol.accept", "listeners[0].proxy_protocol.trusted", "groups.main.send_proxy_protocol"} {
		if !d.isSet(k) {
			t.Errorf("default.yaml does not write %s", k)
		}
	}
	l := elemDefaults[reflect.TypeFor[ListenerConfig]()].Interface().(ListenerConfig)
	g := elemDefaults[reflect.TypeFor[GroupConfig]()].Interface().(GroupConfig)
	if pp := cfg.Listeners[0].ProxyProtocol; pp.Accept != l.ProxyProtocol.Accept || len(pp.Trusted) != 0 {
		t.Errorf("default.yaml listener proxy_protocol %+v, the code's default %+v", pp, l.ProxyProtocol)
	}
	if s := cfg.Groups["main"].SendProxyProtocol; s != g.SendProxyProtocol {
		t.Errorf("default.yaml send_proxy_protocol %q, the code's default %q", s, g.SendProxyProtocol)
	}
}
