package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// flagsPath is the file whose "## Flags" section lists every flag of the
// tidegate commands.
const flagsPath = "operations.md"

// flagDirs are where the commands' flags are defined: the commands, and
// the log flags every command shares.
var flagDirs = []string{"../cmd/tidegate", "../internal/logflags"}

// flagCellRe matches a flag row's first cell: one or more flags, each a
// code span (`--config`, `-c`).
var (
	flagCellRe = regexp.MustCompile("^\\|\\s*((?:`-{1,2}[a-z0-9-]+`(?:,\\s*)?)+)\\s*\\|")
	flagNameRe = regexp.MustCompile("`-{1,2}([a-z0-9-]+)`")
)

// definedFlags returns the names and aliases of every urfave/cli flag the
// non-test files of flagDirs define as a composite literal
// (&cli.IntFlag{Name: ...}), each with where it is.
func definedFlags(t *testing.T) map[string]string {
	t.Helper()
	var files []string
	for _, dir := range flagDirs {
		matches, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(matches) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		files = append(files, matches...)
	}
	fset := token.NewFileSet()
	flags := map[string]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			sel, ok := lit.Type.(*ast.SelectorExpr)
			if !ok || !strings.HasSuffix(sel.Sel.Name, "Flag") {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "cli" {
				return true
			}
			for _, elt := range lit.Elts {
				kv, ok := elt.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				switch key, _ := kv.Key.(*ast.Ident); {
				case key == nil:
				case key.Name == "Name":
					addFlagName(t, fset, flags, kv.Value)
				case key.Name == "Aliases":
					if list, ok := kv.Value.(*ast.CompositeLit); ok {
						for _, a := range list.Elts {
							addFlagName(t, fset, flags, a)
						}
					}
				}
			}
			return true
		})
	}
	return flags
}

// addFlagName records the flag name the string literal e holds.
func addFlagName(t *testing.T, fset *token.FileSet, flags map[string]string, e ast.Expr) {
	t.Helper()
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		t.Errorf("%s: a flag name that is not a string literal; the test cannot read it", fset.Position(e.Pos()))
		return
	}
	name, err := strconv.Unquote(lit.Value)
	if err != nil {
		t.Fatal(err)
	}
	flags[name] = fset.Position(e.Pos()).String()
}

// documentedFlags returns the flags the rows of the "## Flags" section's
// tables name in their first cell, each with its line. Every row must
// start with one or more flags.
func documentedFlags(t *testing.T) map[string]int {
	t.Helper()
	documented := map[string]int{}
	for _, row := range sectionRows(t, flagsPath, "Flags") {
		m := flagCellRe.FindStringSubmatch(row.text)
		if m == nil {
			t.Errorf("%s:%d: a row of the flag tables that does not start with a flag as a code span: %s", flagsPath, row.line, row.text)
			continue
		}
		for _, f := range flagNameRe.FindAllStringSubmatch(m[1], -1) {
			documented[f[1]] = row.line
		}
	}
	return documented
}

// TestOperationsDocumentsEveryFlag: every flag cmd/tidegate defines has a
// row in operations.md's Flags section, and every flag a row names is
// defined.
func TestOperationsDocumentsEveryFlag(t *testing.T) {
	defined := definedFlags(t)
	if len(defined) < 40 {
		t.Fatalf("found %d flags in %s, want all of them (over 40): %v", len(defined), flagDirs, defined)
	}
	documented := documentedFlags(t)
	for name, where := range defined {
		if _, ok := documented[name]; !ok {
			t.Errorf("%s: flag %s (%s) is not documented (want it in the first cell of a row of ## Flags)", flagsPath, name, where)
		}
	}
	for name, line := range documented {
		if _, ok := defined[name]; !ok {
			t.Errorf("%s:%d: documents flag %s, which %s do not define", flagsPath, line, name, flagDirs)
		}
	}
	if _, ok := defined["metrics-listen"]; !ok {
		t.Errorf("definedFlags found no metrics-listen, which every command has: %v", defined)
	}
}
