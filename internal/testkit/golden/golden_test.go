package golden

import (
	"os"
	"path/filepath"
	"testing"
)

// fakeT records a failure instead of ending the test.
type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Helper()                        {}
func (f *fakeT) Errorf(string, ...any)          { f.failed = true }
func (f *fakeT) Fatalf(format string, a ...any) { f.failed = true }

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	if err := os.MkdirAll("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("testdata", "x.txt"), []byte("same\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ok := &fakeT{TB: t}
	Check(ok, "x.txt", []byte("same\n"))
	if ok.failed {
		t.Error("Check failed on equal text")
	}
	diff := &fakeT{TB: t}
	Check(diff, "x.txt", []byte("other\n"))
	if !diff.failed {
		t.Error("Check passed on different text")
	}
	missing := &fakeT{TB: t}
	Check(missing, "absent.txt", nil)
	if !missing.failed {
		t.Error("Check passed with no golden file")
	}
}

func TestFillIsTheSameEachTime(t *testing.T) {
	type inner struct {
		N    float64
		Tags []string
	}
	type outer struct {
		Name  string
		Count int
		OK    bool
		In    *inner
		List  []inner
		ByKey map[string]int
		skip  int
	}
	var a, b outer
	Fill(&a)
	Fill(&b)
	if a.Name == "" || a.Count == 0 || a.In == nil || len(a.List) != 2 || len(a.ByKey) != 1 || a.skip != 0 {
		t.Errorf("Fill left fields unset: %+v", a)
	}
	if a.Name != b.Name || a.In.N != b.In.N || a.List[1].Tags[1] != b.List[1].Tags[1] {
		t.Errorf("Fill differs between runs: %+v, %+v", a, b)
	}
}
