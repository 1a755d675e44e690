// Package standin lets a test binary stand in for the tidegate binary when
// the code under test starts `tidegate proxy` or `tidegate serve` as a child
// process: TestMain calls Run with its arguments, and the test passes
// os.Args[0] as the tidegate binary. A package cannot build cmd/tidegate
// itself, and a test should not depend on a binary built elsewhere.
package standin

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/proxy"
	"github.com/tidegate/tidegate/session/proxy/config"
	"github.com/tidegate/tidegate/session/tlvserver"
)

// stopTimeout bounds the stop after SIGTERM.
const stopTimeout = 5 * time.Second

// Run runs args as the tidegate command they name, if it is one it stands in
// for, until SIGTERM or SIGINT, and returns its exit status and true:
//
//	proxy --config FILE [--log-level L]
//	serve --listen ADDR [--loops N] [--log-level L]
//
// For any other arguments it returns false, and the test binary runs its
// tests. Errors go to standard error, where the starting code's log of the
// child shows them.
func Run(args []string) (int, bool) {
	if len(args) == 0 {
		return 0, false
	}
	var run func([]string) error
	switch args[0] {
	case "proxy":
		run = runProxy
	case "serve":
		run = runServe
	default:
		return 0, false
	}
	if err := run(args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "standin %s: %v\n", args[0], err)
		return 1, true
	}
	return 0, true
}

// server is what both commands start and stop.
type server interface {
	Start() error
	Stop(context.Context) error
}

// serveUntilSignal starts s and stops it on SIGTERM or SIGINT.
func serveUntilSignal(s server) error {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(sig)
	if err := s.Start(); err != nil {
		return err
	}
	<-sig
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	return s.Stop(ctx)
}

// flags parses the command's flags; --log-level is accepted and ignored
// (the stand-in logs warnings only).
func flags(name string, args []string, define func(fs *flag.FlagSet)) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.String("log-level", "", "")
	define(fs)
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("flags %q: %w", args, err)
	}
	return nil
}

func runProxy(args []string) error {
	var configPath string
	if err := flags("proxy", args, func(fs *flag.FlagSet) { fs.StringVar(&configPath, "config", "", "") }); err != nil {
		return err
	}
	cfg, _, err := config.Load(configPath)
	if err != nil {
		return err
	}
	p, err := proxy.New(cfg, zerolog.New(os.Stderr).Level(zerolog.WarnLevel).With().Timestamp().Logger())
	if err != nil {
		return err
	}
	return serveUntilSignal(p)
}

func runServe(args []string) error {
	var listen string
	var loops int
	if err := flags("serve", args, func(fs *flag.FlagSet) {
		fs.StringVar(&listen, "listen", "", "")
		fs.IntVar(&loops, "loops", 1, "")
	}); err != nil {
		return err
	}
	srv, err := tlvserver.New(tlvserver.Config{Reactor: reactor.Config{Addrs: []string{listen}, Loops: loops}})
	if err != nil {
		return err
	}
	return serveUntilSignal(srv)
}
