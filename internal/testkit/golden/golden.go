// Package golden compares what a test rendered with a file under the
// package's testdata/, so that a change to a report's text shows as a
// failing test. Run the test with -update to write the files again from
// what the code renders now (then read the diff before committing it).
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "write the golden files under testdata/ from what the code renders now")

// Check fails t when got differs from testdata/name; with -update it
// writes got there instead.
func Check(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatalf("golden: making %s: %v", filepath.Dir(path), err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatalf("golden: writing %s: %v", path, err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden: reading %s (run the test with -update to write it): %v", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what the code renders now (-update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// Render calls write on a buffer and checks what it wrote with Check.
func Render(t testing.TB, name string, write func(w io.Writer) error) {
	t.Helper()
	var b bytes.Buffer
	if err := write(&b); err != nil {
		t.Fatalf("golden: rendering %s: %v", name, err)
	}
	Check(t, name, b.Bytes())
}

// File checks the file at path, which the code wrote, with Check.
func File(t testing.TB, name, path string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("golden: writing %s: %v", name, err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden: reading %s: %v", path, err)
	}
	Check(t, name, got)
}

// Fill sets every exported field reachable from ptr, which points to a
// struct, to a value of its own that depends only on its place: numbers
// count up from 1 (floats with a fraction), strings are their field's name
// and a number, booleans alternate, pointers are allocated, slices and
// arrays get two elements and maps one. A report rendered from it is the
// same on every run and shows every column; the test then sets what a
// case needs (a failed trial, an empty figure).
func Fill(ptr any) {
	f := filler{}
	f.fill(reflect.ValueOf(ptr).Elem(), "v", 0)
}

type filler struct{ n int }

// maxDepth stops a type that contains itself.
const maxDepth = 8

func (f *filler) next() int { f.n++; return f.n }

func (f *filler) fill(v reflect.Value, name string, depth int) {
	if depth > maxDepth || !v.CanSet() {
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(f.next()%2 == 1)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.Type() == reflect.TypeOf(time.Duration(0)) {
			v.SetInt(int64(f.next()) * int64(time.Millisecond))
			return
		}
		v.SetInt(int64(f.next() % 100))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(uint64(f.next() % 100))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(f.next()) + 0.25)
	case reflect.String:
		v.SetString(fmt.Sprintf("%s%d", name, f.next()))
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		f.fill(p.Elem(), name, depth+1)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			f.fill(s.Index(i), name, depth+1)
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			f.fill(v.Index(i), name, depth+1)
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		f.fill(k, name, depth+1)
		f.fill(e, name, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 12, 1, 12, 0, f.next()%60, 0, time.UTC)))
			return
		}
		for i := range v.NumField() {
			if sf := v.Type().Field(i); sf.IsExported() {
				f.fill(v.Field(i), strings.ToLower(sf.Name), depth+1)
			}
		}
	}
}
