package bench

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
)

// SheetTile is one frame of a contact sheet: the picture, the matte made
// for it and the true matte (nil when unknown).
type SheetTile struct {
	Clip         Clip
	Frame        int
	Matte, Truth []float32
}

// WriteSheet writes a contact sheet PNG: one row per slice of tiles, each
// tile the frame at half size with the matte shown: the background is
// darkened, pixels the matte misses (true subject, alpha < 0.5) are red
// and pixels it adds (alpha >= 0.5 outside the truth) are blue.
func WriteSheet(path string, rows [][]SheetTile) error {
	return drawSheet(path, rows, 2, func(t SheetTile, rgb []float32, w, h, x, y int) [3]float32 {
		n := w * h
		i := 2*y*w + 2*x
		a := (t.Matte[i] + t.Matte[i+1] + t.Matte[i+w] + t.Matte[i+w+1]) / 4
		k := 0.3 + 0.7*a
		var c [3]float32
		for ch := range c {
			c[ch] = k * (rgb[ch*n+i] + rgb[ch*n+i+1] + rgb[ch*n+i+w] + rgb[ch*n+i+w+1]) / 4
		}
		if t.Truth != nil {
			g := t.Truth[i] >= 0.5
			switch {
			case g && a < 0.5:
				c = [3]float32{0.5 + c[0]/2, c[1] / 2, c[2] / 2}
			case !g && a >= 0.5:
				c = [3]float32{c[0] / 2, c[1] / 2, 0.5 + c[2]/2}
			}
		}
		return c
	})
}

// WriteAlphaSheet writes a contact sheet PNG of the tiles at full size,
// each the frame laid over a grey checkerboard by its matte (C = A·F +
// (1−A)·checker), as a compositor looks at an alpha: a half-transparent
// body or a double contour shows the checkerboard through the subject.
func WriteAlphaSheet(path string, rows [][]SheetTile) error {
	return drawSheet(path, rows, 1, func(t SheetTile, rgb []float32, w, h, x, y int) [3]float32 {
		n, i := w*h, y*w+x
		a := min(max(t.Matte[i], 0), 1)
		bg := float32(0.35)
		if (x/16+y/16)%2 == 0 {
			bg = 0.65
		}
		var c [3]float32
		for ch := range c {
			c[ch] = a*rgb[ch*n+i] + (1-a)*bg
		}
		return c
	})
}

// drawSheet lays out rows of tiles at 1/scale of their clips' size, each
// pixel (x, y) of a tile coloured by pixel from the tile and its frame's
// picture (rgb, planar, w x h), and writes the sheet as a PNG.
func drawSheet(path string, rows [][]SheetTile, scale int, pixel func(t SheetTile, rgb []float32, w, h, x, y int) [3]float32) error {
	cols, tw, th := 0, 0, 0
	for _, r := range rows {
		cols = max(cols, len(r))
		for _, t := range r {
			w, h := t.Clip.Size()
			tw, th = max(tw, w/scale), max(th, h/scale)
		}
	}
	if cols == 0 {
		return fmt.Errorf("bench: empty contact sheet")
	}
	img := image.NewRGBA(image.Rect(0, 0, cols*(tw+sheetGap), len(rows)*(th+sheetGap)))
	for ri, r := range rows {
		for ci, t := range r {
			w, h := t.Clip.Size()
			rgb := make([]float32, 3*w*h)
			if err := t.Clip.Load(t.Frame, rgb, nil); err != nil {
				return err
			}
			for y := 0; y < h/scale; y++ {
				for x := 0; x < w/scale; x++ {
					c := pixel(t, rgb, w, h, x, y)
					img.Set(ci*(tw+sheetGap)+x, ri*(th+sheetGap)+y, color.RGBA{to8(float64(c[0])), to8(float64(c[1])), to8(float64(c[2])), 255})
				}
			}
		}
	}
	return savePNG(path, img)
}

// sheetGap is the gap between a contact sheet's tiles, in pixels.
const sheetGap = 4

// savePNG writes img to path as a PNG (the contact sheets here and in
// look.go).
func savePNG(path string, img image.Image) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
