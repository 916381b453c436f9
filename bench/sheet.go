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
	img, tw, th, err := sheetCanvas(rows, 2)
	if err != nil {
		return err
	}
	const gap = sheetGap
	for ri, r := range rows {
		for ci, t := range r {
			w, h := t.Clip.Size()
			rgb := make([]float32, 3*w*h)
			if err := t.Clip.Load(t.Frame, rgb, nil); err != nil {
				return err
			}
			n := w * h
			for y := 0; y < h/2; y++ {
				for x := 0; x < w/2; x++ {
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
					img.Set(ci*(tw+gap)+x, ri*(th+gap)+y, color.RGBA{uint8(c[0]*255 + 0.5), uint8(c[1]*255 + 0.5), uint8(c[2]*255 + 0.5), 255})
				}
			}
		}
	}
	return savePNG(path, img)
}

// WriteAlphaSheet writes a contact sheet PNG of the tiles at full size,
// each the frame laid over a grey checkerboard by its matte (C = A·F +
// (1−A)·checker), as a compositor looks at an alpha: a half-transparent
// body or a double contour shows the checkerboard through the subject.
func WriteAlphaSheet(path string, rows [][]SheetTile) error {
	img, tw, th, err := sheetCanvas(rows, 1)
	if err != nil {
		return err
	}
	const gap = sheetGap
	for ri, r := range rows {
		for ci, t := range r {
			w, h := t.Clip.Size()
			rgb := make([]float32, 3*w*h)
			if err := t.Clip.Load(t.Frame, rgb, nil); err != nil {
				return err
			}
			n := w * h
			for y := 0; y < h; y++ {
				for x := 0; x < w; x++ {
					i := y*w + x
					a := min(max(t.Matte[i], 0), 1)
					bg := float32(0.35)
					if (x/16+y/16)%2 == 0 {
						bg = 0.65
					}
					var c [3]uint8
					for ch := range c {
						c[ch] = uint8((a*rgb[ch*n+i]+(1-a)*bg)*255 + 0.5)
					}
					img.Set(ci*(tw+gap)+x, ri*(th+gap)+y, color.RGBA{c[0], c[1], c[2], 255})
				}
			}
		}
	}
	return savePNG(path, img)
}

// sheetGap is the gap between a contact sheet's tiles, in pixels.
const sheetGap = 4

// sheetCanvas is the blank image for rows of tiles at 1/scale of their
// clips' size, with the tile size.
func sheetCanvas(rows [][]SheetTile, scale int) (img *image.RGBA, tw, th int, err error) {
	cols := 0
	for _, r := range rows {
		cols = max(cols, len(r))
		for _, t := range r {
			w, h := t.Clip.Size()
			tw, th = max(tw, w/scale), max(th, h/scale)
		}
	}
	if cols == 0 {
		return nil, 0, 0, fmt.Errorf("bench: empty contact sheet")
	}
	return image.NewRGBA(image.Rect(0, 0, cols*(tw+sheetGap), len(rows)*(th+sheetGap))), tw, th, nil
}

// savePNG writes img to path.
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
