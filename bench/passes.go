package bench

import (
	"context"
	bin "encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// sheetPasses are the EXR passes of a pass sheet, in reading order, with
// how each is shown: its channel count and a map from its linear value to
// a display value in 0..1 (before the sRGB curve, unless raw).
var sheetPasses = []struct {
	name, label string
	chans       int
	show        func(v float32) float32
	raw         bool // no sRGB curve (mattes, normals, ratios)
}{
	{"composite", "composite", 3, func(v float32) float32 { return v }, false},
	{"foreground", "foreground (premultiplied)", 4, func(v float32) float32 { return v }, false},
	{"alpha", "alpha", 1, func(v float32) float32 { return v }, true},
	{"backdrop", "backdrop", 3, func(v float32) float32 { return v }, false},
	{"shadow", "shadow (white = dark)", 1, func(v float32) float32 { return v }, true},
	{"wrap", "light wrap (x4)", 3, func(v float32) float32 { return 4 * v }, false},
	{"gain", "relight gain over the alpha (grey = 1)", 3, func(v float32) float32 { return v / 2 }, true},
	{"normals", "normals (xyz/2 + 1/2)", 3, func(v float32) float32 { return v/2 + 0.5 }, true},
	{"grain", "grain ((g-1) x 20 + 1/2)", 3, func(v float32) float32 { return (v-1)*20 + 0.5 }, true},
}

// WritePassSheet writes a PNG of frame number of the EXR passes in dir
// (dir/<pass>/<pass>.NNNN.exr, as `vfx render --output-format exr`
// writes them) side by side, three to a row, each labelled. It reads the
// files and draws the labels with the ffmpeg command line.
func WritePassSheet(ctx context.Context, dir string, number int, out string) error {
	var tiles []*image.RGBA
	var alpha []float32 // the gain is shown where it acts: grey outside the matte
	w, h := 0, 0
	for _, p := range sheetPasses {
		path := filepath.Join(dir, p.name, fmt.Sprintf("%s.%04d.exr", p.name, number))
		pf := map[int]string{1: "grayf32le", 3: "gbrpf32le", 4: "gbrapf32le"}[p.chans]
		cmd := exec.CommandContext(ctx, "ffmpeg", "-v", "error", "-i", path, "-f", "rawvideo", "-pix_fmt", pf, "-")
		raw, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("bench: pass sheet: read %s: %w", path, err)
		}
		probe, err := exec.CommandContext(ctx, "ffprobe", "-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0", path).Output()
		if err != nil {
			return fmt.Errorf("bench: pass sheet: probe %s: %w", path, err)
		}
		var pw, ph int
		if _, err := fmt.Sscanf(strings.TrimSpace(string(probe)), "%d,%d", &pw, &ph); err != nil || pw*ph*p.chans*4 != len(raw) {
			return fmt.Errorf("bench: pass sheet: %s: size %q, %d bytes", path, probe, len(raw))
		}
		if w == 0 {
			w, h = pw, ph
		} else if pw != w || ph != h {
			return fmt.Errorf("bench: pass sheet: %s is %dx%d, the others %dx%d", path, pw, ph, w, h)
		}
		n := w * h
		val := func(c, k int) float32 { return math.Float32frombits(bin.LittleEndian.Uint32(raw[4*(c*n+k):])) }
		tile := image.NewRGBA(image.Rect(0, 0, w, h))
		for k := range n {
			var rgb [3]float32
			if p.chans == 1 {
				rgb = [3]float32{val(0, k), val(0, k), val(0, k)}
			} else { // planes g, b, r
				rgb = [3]float32{val(2, k), val(0, k), val(1, k)}
			}
			if p.name == "alpha" {
				alpha = append(alpha, rgb[0])
			}
			if p.name == "gain" && len(alpha) == n {
				for c := range rgb {
					rgb[c] = alpha[k]*rgb[c] + (1 - alpha[k])
				}
			}
			var px [3]uint8
			for c, v := range rgb {
				d := float64(max(0, min(1, p.show(v))))
				if !p.raw {
					d = srgbEncode(d)
				}
				px[c] = uint8(math.Round(255 * d))
			}
			tile.Set(k%w, k/w, color.RGBA{px[0], px[1], px[2], 255})
		}
		tiles = append(tiles, tile)
	}
	const cols, gap = 3, 4
	rows := (len(tiles) + cols - 1) / cols
	sheet := image.NewRGBA(image.Rect(0, 0, cols*w+(cols-1)*gap, rows*h+(rows-1)*gap))
	for i, t := range tiles {
		x0, y0 := (i%cols)*(w+gap), (i/cols)*(h+gap)
		for y := range h {
			copy(sheet.Pix[(y0+y)*sheet.Stride+4*x0:], t.Pix[y*t.Stride:y*t.Stride+4*w])
		}
	}
	tmp := out + ".tmp.png"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("bench: pass sheet: %w", err)
	}
	err = png.Encode(f, sheet)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	defer os.Remove(tmp)
	if err != nil {
		return fmt.Errorf("bench: pass sheet: %w", err)
	}
	var draws []string
	for i, p := range sheetPasses {
		draws = append(draws, fmt.Sprintf("drawtext=text='%s':x=%d:y=%d:fontsize=%d:fontcolor=white:box=1:boxcolor=black@0.6:boxborderw=3",
			p.label, (i%cols)*(w+gap)+6, (i/cols)*(h+gap)+6, max(10, h/14)))
	}
	cmd := exec.CommandContext(ctx, "ffmpeg", "-v", "error", "-y", "-i", tmp, "-vf", strings.Join(draws, ","), out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("bench: pass sheet: labels: %w: %s", err, msg)
	}
	return nil
}

// srgbEncode is the sRGB transfer curve (linear 0..1 to display 0..1).
func srgbEncode(v float64) float64 {
	if v <= 0.0031308 {
		return 12.92 * v
	}
	return 1.055*math.Pow(v, 1/2.4) - 0.055
}
