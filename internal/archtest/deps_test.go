package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The rules. Paths are relative to the module (cmd/tidegate, session/proxy);
// a rule on a path covers the packages under it too.
//
// Dependencies point down: cmd -> internal/lifecycle -> session/* ->
// reactor, protocol. Test files follow the same directions, with one
// exception: any test may import internal/testkit/..., which is what it is
// for. Product code (every package but benchmarks/..., cmd/tidegate-bench
// and internal/testkit/...) imports neither benchmarks/ nor
// internal/testkit/ in its non-test files, and its tests do not import
// benchmarks/ either (a product test that needs a peer gets it from
// internal/testkit).
//
// The rules are read from the build of the platform the test runs on (go
// list applies build constraints), which is where the suite runs.
//
// go test caches a pass by the files the test opens: it reads every Go file
// it checks, but a new package or file does not invalidate the cache, so
// run it with -count=1 after adding one.

// importRules are the directions: from must not import any package under
// the banned paths ("" is the whole module).
var importRules = []struct {
	from   string
	banned []string
}{
	// protocol/... may build on itself (protocol/mc/play on protocol/mc's
	// VarInts and strings), nothing else of this module.
	{"protocol", []string{"reactor", "session", "internal", "cmd", "benchmarks"}},
	{"reactor", []string{"session", "cmd", "internal/lifecycle", "benchmarks"}},
	{"session", []string{"cmd", "internal/lifecycle", "benchmarks"}},
	{"internal/lifecycle", []string{"cmd", "benchmarks"}},
	// The metrics address's access policy is plain HTTP, below everything
	// that serves it (internal/lifecycle, cmd).
	{"internal/adminaccess", []string{"session", "reactor", "protocol", "internal/lifecycle", "cmd", "benchmarks"}},
	{"cmd/tidegate", []string{"benchmarks"}},
}

// nonProduct are the packages that are not product code: the load tools
// and the test helpers.
var nonProduct = []string{"benchmarks", "cmd/tidegate-bench", "internal/testkit"}

// testHelpers may be imported by any test.
const testHelpers = "internal/testkit"

// Size limits, in lines of non-test Go (GoFiles: what the package builds
// from here, test files left out).
const (
	maxPackageLines = 3500
	maxFileLines    = 600
)

// pkg is one package of the module as go list reports it, with its files
// read: the imports of each file and the lines of each non-test file.
type pkg struct {
	ImportPath   string
	Dir          string
	Module       *struct{ Path string }
	GoFiles      []string
	CgoFiles     []string
	TestGoFiles  []string
	XTestGoFiles []string

	rel     string              // ImportPath relative to the module
	imports map[string][]string // file name -> module-relative imports of this module
	lines   map[string]int      // non-test file name -> lines
}

// within reports whether the module-relative path rel is path or under it;
// every path is within "".
func within(rel, path string) bool {
	return path == "" || rel == path || strings.HasPrefix(rel, path+"/")
}

func product(rel string) bool {
	return !slices.ContainsFunc(nonProduct, func(p string) bool { return within(rel, p) })
}

// importViolations returns one message per import that breaks a rule,
// naming the file and the import.
func importViolations(pkgs []*pkg) []string {
	var out []string
	for _, p := range pkgs {
		for _, f := range sortedKeys(p.imports) {
			test := strings.HasSuffix(f, "_test.go")
			for _, imp := range p.imports[f] {
				if imp == p.rel || (test && within(imp, testHelpers)) {
					continue // an external test of its own package; a test helper
				}
				var why []string
				for _, r := range importRules {
					for _, b := range r.banned {
						if within(p.rel, r.from) && within(imp, b) {
							why = append(why, fmt.Sprintf("%s/... must not import %s", r.from, describe(b)))
						}
					}
				}
				if product(p.rel) && within(imp, "benchmarks") {
					why = append(why, "product code and its tests do not import benchmarks/ (a peer a test needs belongs in internal/testkit)")
				}
				if product(p.rel) && within(imp, testHelpers) && !test {
					why = append(why, "product code does not import internal/testkit/ outside its tests")
				}
				if len(why) > 0 {
					out = append(out, fmt.Sprintf("%s/%s imports %s: %s", p.rel, f, imp, strings.Join(why, "; ")))
				}
			}
		}
	}
	return out
}

// describe names the packages under path, for a message.
func describe(path string) string {
	if path == "" {
		return "any package of this module"
	}
	return path + "/..."
}

// sizeViolations returns one message per package or non-test file over its
// size limit, with its size.
func sizeViolations(pkgs []*pkg) []string {
	var out []string
	for _, p := range pkgs {
		total := 0
		for _, f := range sortedKeys(p.lines) {
			n := p.lines[f]
			total += n
			if n > maxFileLines {
				out = append(out, fmt.Sprintf("%s/%s: %d lines of non-test Go, over the limit of %d per file", p.rel, f, n, maxFileLines))
			}
		}
		if total > maxPackageLines {
			out = append(out, fmt.Sprintf("%s: %d lines of non-test Go in %d files, over the limit of %d per package (largest: %s)",
				p.rel, total, len(p.lines), maxPackageLines, largest(p.lines, 3)))
		}
	}
	return out
}

// largest names the n largest files of lines with their sizes.
func largest(lines map[string]int, n int) string {
	files := sortedKeys(lines)
	slices.SortStableFunc(files, func(a, b string) int { return lines[b] - lines[a] })
	var parts []string
	for _, f := range files[:min(n, len(files))] {
		parts = append(parts, fmt.Sprintf("%s %d", f, lines[f]))
	}
	return strings.Join(parts, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// loadModule runs go list once over the module and reads its packages' files.
var loadModule = sync.OnceValues(func() ([]*pkg, error) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	if root == "." || root == "" {
		return nil, fmt.Errorf("go env GOMOD gave %q: not in a module", gomod)
	}
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -json ./... in %s: %w\n%s", root, err, stderr.Bytes())
	}
	var pkgs []*pkg
	dec := json.NewDecoder(bytes.NewReader(stdout))
	for {
		p := &pkg{}
		if err := dec.Decode(p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("decoding go list's output: %w", err)
		}
		if err := p.read(); err != nil {
			return nil, err
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("go list -json ./... in %s listed no package", root)
	}
	return pkgs, nil
})

// read fills in p's module-relative path, each file's imports of this
// module and each non-test file's lines.
func (p *pkg) read() error {
	if p.Module == nil {
		return fmt.Errorf("package %s: go list names no module", p.ImportPath)
	}
	mod := p.Module.Path
	p.rel = strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, mod), "/")
	p.imports = map[string][]string{}
	p.lines = map[string]int{}
	fset := token.NewFileSet()
	for _, group := range [][]string{p.GoFiles, p.CgoFiles, p.TestGoFiles, p.XTestGoFiles} {
		for _, name := range group {
			src, err := os.ReadFile(filepath.Join(p.Dir, name))
			if err != nil {
				return fmt.Errorf("package %s: %w", p.ImportPath, err)
			}
			if !strings.HasSuffix(name, "_test.go") {
				p.lines[name] = countLines(src)
			}
			f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
			if err != nil {
				return fmt.Errorf("package %s: parsing the imports of %s: %w", p.ImportPath, name, err)
			}
			for _, spec := range f.Imports {
				path, err := strconv.Unquote(spec.Path.Value)
				if err != nil {
					return fmt.Errorf("package %s: import %s in %s: %w", p.ImportPath, spec.Path.Value, name, err)
				}
				if path == mod || strings.HasPrefix(path, mod+"/") {
					p.imports[name] = append(p.imports[name], strings.TrimPrefix(strings.TrimPrefix(path, mod), "/"))
				}
			}
		}
	}
	return nil
}

// countLines counts lines as wc -l does, plus a last line without its newline.
func countLines(src []byte) int {
	n := bytes.Count(src, []byte{'\n'})
	if len(src) > 0 && src[len(src)-1] != '\n' {
		n++
	}
	return n
}

func module(t *testing.T) []*pkg {
	t.Helper()
	pkgs, err := loadModule()
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// TestImportDirections fails for every import that points up the layers or
// from product code into the load tools or the test helpers.
func TestImportDirections(t *testing.T) {
	for _, msg := range importViolations(module(t)) {
		t.Error(msg)
	}
}

// TestSizes fails for every package over maxPackageLines and every file
// over maxFileLines of non-test Go.
func TestSizes(t *testing.T) {
	for _, msg := range sizeViolations(module(t)) {
		t.Error(msg)
	}
}

// TestRulesCatchViolations runs the checks on a made-up module that breaks
// each rule once, so that a rule that stopped firing fails here.
func TestRulesCatchViolations(t *testing.T) {
	mk := func(rel string, imports map[string][]string, lines map[string]int) *pkg {
		return &pkg{rel: rel, imports: imports, lines: lines}
	}
	pkgs := []*pkg{
		mk("protocol/mc", map[string][]string{"mc.go": {"reactor"}, "mc_test.go": {"internal/testkit/waitfor", "protocol/mc"}}, nil),
		mk("protocol/mc/play", map[string][]string{"play.go": {"protocol/mc"}}, nil), // allowed: protocol builds on itself
		mk("reactor", map[string][]string{"a.go": {"session/proxy", "internal/lifecycle"}}, nil),
		mk("session/proxy", map[string][]string{"p.go": {"cmd/tidegate", "reactor"}, "health_test.go": {"benchmarks/peers", "internal/testkit/testredis"}}, nil),
		mk("internal/lifecycle", map[string][]string{"l.go": {"cmd/tidegate", "session/proxy"}}, nil),
		mk("cmd/tidegate", map[string][]string{"main.go": {"internal/lifecycle", "internal/testkit/logbuf"}, "main_test.go": {"benchmarks/mcload"}}, nil),
		mk("cmd/tidegate-bench", map[string][]string{"main.go": {"benchmarks/mcload", "internal/testkit/testserver"}}, nil),
		mk("internal/testkit/standin", map[string][]string{"standin_test.go": {"benchmarks/peers"}}, nil),
		mk("benchmarks/peers", map[string][]string{"p.go": {"session/proxy"}}, nil),
	}
	const benchRule = "product code and its tests do not import benchmarks/ (a peer a test needs belongs in internal/testkit)"
	want := []string{
		"protocol/mc/mc.go imports reactor: protocol/... must not import reactor/...",
		"reactor/a.go imports session/proxy: reactor/... must not import session/...",
		"reactor/a.go imports internal/lifecycle: reactor/... must not import internal/lifecycle/...",
		"session/proxy/health_test.go imports benchmarks/peers: session/... must not import benchmarks/...; " + benchRule,
		"session/proxy/p.go imports cmd/tidegate: session/... must not import cmd/...",
		"internal/lifecycle/l.go imports cmd/tidegate: internal/lifecycle/... must not import cmd/...",
		"cmd/tidegate/main.go imports internal/testkit/logbuf: product code does not import internal/testkit/ outside its tests",
		"cmd/tidegate/main_test.go imports benchmarks/mcload: cmd/tidegate/... must not import benchmarks/...; " + benchRule,
	}
	if got := importViolations(pkgs); !slices.Equal(got, want) {
		t.Errorf("import violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	sized := []*pkg{
		mk("session/proxy", nil, map[string]int{"config.go": 764, "relay.go": 600, "a.go": 2000, "b.go": 200}),
		mk("reactor", nil, map[string]int{"listen.go": 524, "server.go": 519}),
	}
	wantSize := []string{
		"session/proxy/a.go: 2000 lines of non-test Go, over the limit of 600 per file",
		"session/proxy/config.go: 764 lines of non-test Go, over the limit of 600 per file",
		"session/proxy: 3564 lines of non-test Go in 4 files, over the limit of 3500 per package (largest: a.go 2000, config.go 764, relay.go 600)",
	}
	if got := sizeViolations(sized); !slices.Equal(got, wantSize) {
		t.Errorf("size violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantSize, "\n"))
	}

	if got, want := countLines([]byte("a\nb\nc")), 3; got != want {
		t.Errorf("countLines without a final newline = %d, want %d", got, want)
	}
	if got, want := countLines([]byte("a\nb\n")), 2; got != want {
		t.Errorf("countLines = %d, want %d", got, want)
	}
}
