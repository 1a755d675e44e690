package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// NetnsLayout is the three-host network scripts/netns.sh builds: client,
// proxy and backend namespaces, joined by veth pairs client–proxy and
// proxy–backend, the proxy namespace forwarding between them (so the direct
// phase crosses the same links through the proxy host's kernel).
type NetnsLayout struct {
	Prefix                       string
	ClientNS, ProxyNS, BackendNS string
	// ClientIP and ProxyIP are the two ends of the client–proxy link;
	// BackendIP is the backend's end of the proxy–backend link.
	ClientIP, ProxyIP, BackendIP string
}

// Layout returns the layout scripts/netns.sh makes for prefix; the two must
// agree (TestNetnsScriptLayout checks them against each other).
func Layout(prefix string) NetnsLayout {
	return NetnsLayout{
		Prefix:   prefix,
		ClientNS: prefix + "-client", ProxyNS: prefix + "-proxy", BackendNS: prefix + "-backend",
		ClientIP: "10.213.1.1", ProxyIP: "10.213.1.2", BackendIP: "10.213.2.2",
	}
}

// Exec returns the command prefix that runs a program in namespace ns.
func (l NetnsLayout) Exec(ns string) []string { return []string{"ip", "netns", "exec", ns} }

// NetnsPreflight reports why namespaces cannot be made here, if they cannot.
func NetnsPreflight(script string) error {
	for _, tool := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("--rtt needs %s (Debian: apt-get install iproute2): %w", tool, err)
		}
	}
	if _, err := os.Stat(script); err != nil {
		return fmt.Errorf("--rtt needs the namespace script %s (run from the repository root or pass --netns-script): %w", script, err)
	}
	return nil
}

// RunInNetns builds the namespaces with script (up PREFIX RTT), runs argv
// in the client namespace, and removes the namespaces (down PREFIX) however
// the run ends, including on SIGINT and SIGTERM.
func RunInNetns(ctx context.Context, script, prefix string, rtt time.Duration, argv []string) error {
	if err := NetnsPreflight(script); err != nil {
		return err
	}
	l := Layout(prefix)
	down := func() error {
		out, err := exec.Command("sh", script, "down", prefix).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s down %s: %w: %s", script, prefix, err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	up := exec.CommandContext(ctx, "sh", script, "up", prefix, fmt.Sprintf("%dus", rtt.Microseconds()))
	if out, err := up.CombinedOutput(); err != nil {
		return errors.Join(fmt.Errorf("%s up %s %v: %w:\n%s", script, prefix, rtt, err, strings.TrimSpace(string(out))), down())
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	cmd := exec.Command("ip", append(append([]string{}, l.Exec(l.ClientNS)[1:]...), argv...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return errors.Join(fmt.Errorf("running in namespace %s: %w", l.ClientNS, err), down())
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var runErr error
	select {
	case runErr = <-done:
	case s := <-sigs:
		cmd.Process.Signal(s)
		runErr = <-done
	}
	return errors.Join(runErr, down())
}
