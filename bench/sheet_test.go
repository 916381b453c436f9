package bench

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteSheets writes both contact sheets of a synthetic case and
// checks their sizes and that the alpha sheet shows the subject where the
// alpha is 1 and the checkerboard where it is 0.
func TestWriteSheets(t *testing.T) {
	c := MatteSuite(64, 48, 2)[0]
	cl := caseClip{c}
	rgb := make([]float32, 3*64*48)
	a := make([]float32, 64*48)
	c.Render(0, rgb, a)
	row := [][]SheetTile{{{Clip: cl, Frame: 0, Matte: a, Truth: a}, {Clip: cl, Frame: 0, Matte: a}}}
	dir := t.TempDir()
	for name, write := range map[string]func(string, [][]SheetTile) error{"half.png": WriteSheet, "alpha.png": WriteAlphaSheet} {
		if err := write(filepath.Join(dir, name), row); err != nil {
			t.Fatal(err)
		}
	}
	size := func(name string) (int, int) {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		im, err := png.Decode(f)
		if err != nil {
			t.Fatal(err)
		}
		b := im.Bounds()
		return b.Dx(), b.Dy()
	}
	if w, h := size("half.png"); w != 2*(32+sheetGap) || h != 24+sheetGap {
		t.Errorf("half-size sheet %dx%d", w, h)
	}
	if w, h := size("alpha.png"); w != 2*(64+sheetGap) || h != 48+sheetGap {
		t.Errorf("full-size sheet %dx%d", w, h)
	}
	if err := WriteAlphaSheet(filepath.Join(dir, "none.png"), nil); err == nil {
		t.Error("an empty sheet: no error")
	}
}
