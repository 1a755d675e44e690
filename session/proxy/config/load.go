package config

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/reactor/flowcontrol"
)

//go:embed default.yaml
var defaultConfigYAML []byte

// DefaultYAML returns the embedded default configuration.
func DefaultYAML() []byte { return bytes.Clone(defaultConfigYAML) }

// embeddedName is the file name problems in the embedded default are
// reported under.
const embeddedName = "default.yaml (embedded)"

// Load reads the configuration at path; an empty path gives the embedded
// default. See Parse for what it returns.
func Load(path string) (*Config, []Problem, error) {
	if path == "" {
		return Parse(embeddedName, defaultConfigYAML)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading proxy config: %w", err)
	}
	return Parse(path, data)
}

// Parse decodes a YAML configuration over the defaults (a key the file
// leaves out keeps its default, one by one: a limits: that sets one limit
// keeps the others), expands ${VAR} and ${VAR:-default} in values from the
// environment, and validates the result. name is the file name problems are
// reported under.
//
// On any problem it returns an *Error that lists all of them: syntax
// (which stops there), unknown keys, values of the wrong kind, placeholders
// and the checks of Validate, each with its line and column. Otherwise it
// returns the configuration and its warnings: what is valid but likely not
// meant, as a listener no host can be routed from. It also reads the file
// the configuration names (status.offline.favicon), relative to name's
// directory; it is the only step that reads anything.
func Parse(name string, data []byte) (*Config, []Problem, error) {
	return parse(name, data, newDecoder(os.LookupEnv, len(data)))
}

// parse is Parse with the decoder given, so that tests can see where it
// found each key.
func parse(name string, data []byte, d *decoder) (*Config, []Problem, error) {
	invalid := func(ps []Problem) error {
		sortProblems(ps)
		return &Error{File: name, Problems: ps}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, invalid([]Problem{syntaxProblem(data, err)})
	}
	cfg := defaultConfig()
	if name != "" && name != embeddedName {
		cfg.dir = filepath.Dir(name)
	}
	if len(doc.Content) > 0 {
		d.value(doc.Content[0], reflect.ValueOf(&cfg).Elem(), "")
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		at := &next
		if len(next.Content) > 0 {
			at = next.Content[0]
		}
		d.fail(at, "", "a second YAML document (after ---): the proxy reads only the first; remove it")
	case !errors.Is(err, io.EOF):
		d.problems = append(d.problems, syntaxProblem(data, err))
	}
	for _, p := range append(append(cfg.check(d.isSet), cfg.readFiles()...), cfg.readSecrets()...) {
		if !d.suppressed(p.Path) {
			p.Line, p.Col = d.where(p.Path)
			d.problems = append(d.problems, p)
		}
	}
	if len(d.problems) > 0 {
		return nil, nil, invalid(d.problems)
	}
	warnings := cfg.warnings()
	for i := range warnings {
		warnings[i].Line, warnings[i].Col = d.where(warnings[i].Path)
	}
	sortProblems(warnings)
	return &cfg, warnings, nil
}

// defaultConfig is what a file is decoded over: every default but the
// listeners, routes, groups and default_group, which have none. default.yaml
// states the same values (TestDefaultYAMLStatesTheDefaults).
func defaultConfig() Config {
	return Config{
		Forwarding: ForwardNone,
		Limits: Limits{
			HandshakeTimeout: 5 * time.Second,
			ConnectTimeout:   3 * time.Second,
			IdleTimeout:      10 * time.Minute,
			FinTimeout:       30 * time.Second,
			PrerouteBytes:    64 << 10,
			MaxFrame:         1<<21 - 1,
			HighWatermark:    flowcontrol.DefaultHighWatermark,
			LowWatermark:     flowcontrol.DefaultLowWatermark,
			BufferBudget:     1 << 30,
			Linger:           flowcontrol.DefaultLinger,

			ConnectionRate:       10,
			ConnectionBurst:      20,
			LoginRate:            2,
			LoginBurst:           10,
			MaxSessionsPerSubnet: 256,
			SubnetPrefixIPv4:     24,
			SubnetPrefixIPv6:     48,
			RateLimitAddresses:   65536,
			UsernamePattern:      mc.DefaultUsernamePattern,

			SubnetConnectionRate:  40,
			SubnetConnectionBurst: 80,
			SubnetLoginRate:       8,
			SubnetLoginBurst:      40,
			AddressPrefixIPv4:     32,
			AddressPrefixIPv6:     64,
			RateLimitPerSubnet:    256,
		},
		Probes: ProbeConfig{
			Failures:       3,
			Cooldown:       10 * time.Second,
			Timeout:        2 * time.Second,
			Kind:           ProbeAuto,
			OfflineMessage: DefaultOfflineMessage,
		},
		Status: StatusConfig{
			CacheTTL: 5 * time.Second,
			Timeout:  2 * time.Second,
			Protocol: StatusProtocolBackend,
			Offline:  OfflineStatusConfig{VersionName: DefaultStatusVersionName},
		},
		Shutdown: ShutdownConfig{DrainTimeout: 30 * time.Second, Message: DefaultShutdownMessage},
		Admin:    AdminConfig{Enabled: true},
		Cluster:  defaultClusterConfig(),
		Auth:     defaultAuthConfig(),
	}
}
