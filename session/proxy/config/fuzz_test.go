package config

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParseConfig: any input gives either a configuration that validates or
// a *Error with at least one problem, never a panic; the same input
// gives the same answer twice (no map order leaks into it); and aliases
// cannot make it do unbounded work.
func FuzzParseConfig(f *testing.F) {
	f.Add(DefaultYAML())
	f.Add([]byte(validTail))
	f.Add([]byte("limits: &l\n  <<: *l\n"))
	f.Add([]byte("a: &a [x, x, x, x]\nb: &b [*a, *a, *a, *a]\nroutes: [{hosts: *b}]\n"))
	f.Add([]byte("groups: {g: &g {backends: [{addr: ${HOME:-x}:1}]}, h: *g}\nlisteners: [{listen: ':0', mode: raw, group: g}]\n"))
	f.Add([]byte("listeners:\n\t- listen: \"x\n"))
	f.Add([]byte("---\n---\nloops: *x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			t.Skip("config files are small; larger inputs only slow the search")
		}
		cfg, warnings, err := Parse("fuzz.yaml", data)
		_, _, again := Parse("fuzz.yaml", data)
		if (err == nil) != (again == nil) || err != nil && err.Error() != again.Error() {
			t.Fatalf("two answers for one input:\n%v\n---\n%v", err, again)
		}
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) || len(ce.Problems) == 0 || cfg != nil || warnings != nil {
				t.Fatalf("error %T %v with config %v, warnings %v", err, err, cfg, warnings)
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "fuzz.yaml") {
					t.Fatalf("problem line %q does not start with the file name", line)
				}
			}
			return
		}
		if verr := cfg.Validate(); verr != nil {
			t.Fatalf("accepted a configuration that does not validate: %v", verr)
		}
	})
}
