// Package testproxy starts the tidegate proxy in process for tests. It is
// not part of testserver because session/proxy's own tests import
// testserver, and testserver importing session/proxy would be a cycle.
package testproxy

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/session/proxy"
	"github.com/tidegate/tidegate/session/proxy/config"
)

// Start starts the tidegate proxy in process with the configuration in
// yamlText (as `tidegate proxy --config` reads it), stops it when the test
// ends, and returns the address of its first listener.
func Start(t testing.TB, yamlText string) string {
	t.Helper()
	cfg, _, err := config.Parse("", []byte(yamlText))
	if err != nil {
		t.Fatal(err)
	}
	p, err := proxy.New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = p.Stop(ctx)
	})
	a, err := p.Addr(0)
	if err != nil {
		t.Fatal(err)
	}
	return a.String()
}
