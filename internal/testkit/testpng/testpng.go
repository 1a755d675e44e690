// Package testpng writes small PNG images for the tests of favicons.
package testpng

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

// Write writes a w×h PNG into dir and returns its path and bytes.
func Write(t testing.TB, dir string, w, h int) (string, []byte) {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := range w {
		img.Set(i, i%h, color.NRGBA{R: 200, G: uint8(i * 3), B: 40, A: 255})
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, fmt.Sprintf("icon-%dx%d.png", w, h))
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, b.Bytes()
}
