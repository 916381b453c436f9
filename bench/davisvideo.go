package bench

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/draw"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/frame"
)

// DAVISVideo is a sequence in the layout of ../shared/datasets: a folder
// with source.mp4 and masks/NNNNN.png, one mask per decoded frame. The
// video is decoded once, at open, into packed RGB24.
type DAVISVideo struct {
	name   string
	masks  []string
	frames [][]byte
	w, h   int
}

// OpenDAVISVideo decodes dir/source.mp4 and lists dir/masks. The frame and
// mask counts must agree.
func OpenDAVISVideo(ctx context.Context, dir string) (*DAVISVideo, error) {
	masks, err := numbered(filepath.Join(dir, "masks"), ".png")
	if err != nil {
		return nil, fmt.Errorf("bench: %s: %w", dir, err)
	}
	dec, err := codec.NewDecoder(ctx, codec.FileInput(filepath.Join(dir, "source.mp4")), codec.Limits{MaxFrames: 10000}, codec.DecodeOptions{Format: frame.RGB24})
	if err != nil {
		return nil, fmt.Errorf("bench: %s: %w", dir, err)
	}
	defer dec.Close()
	v := &DAVISVideo{name: filepath.Base(dir), masks: masks}
	f := &frame.HostFrame{}
	for {
		if err := dec.Next(ctx, f); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("bench: %s: %w", dir, err)
		}
		v.w, v.h = f.Width, f.Height
		b := make([]byte, 3*v.w*v.h)
		for y := 0; y < v.h; y++ {
			copy(b[3*v.w*y:3*v.w*(y+1)], f.Planes[0][y*f.Strides[0]:])
		}
		v.frames = append(v.frames, b)
	}
	if len(v.frames) == 0 || len(v.frames) != len(masks) {
		return nil, fmt.Errorf("bench: %s: %d frames decoded, %d masks", dir, len(v.frames), len(masks))
	}
	return v, nil
}

// DAVISVideoDirs lists the sequence folders of a dataset folder (those
// with a source.mp4), sorted by name.
func DAVISVideoDirs(root string) ([]string, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if _, err := os.Stat(filepath.Join(root, e.Name(), "source.mp4")); e.IsDir() && err == nil {
			out = append(out, filepath.Join(root, e.Name()))
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return nil, fmt.Errorf("bench: no sequence (NAME/source.mp4) in %s", root)
	}
	return out, nil
}

// Name is the sequence's folder name.
func (v *DAVISVideo) Name() string { return v.name }

// Size is the frame size.
func (v *DAVISVideo) Size() (int, int) { return v.w, v.h }

// Len is the frame count.
func (v *DAVISVideo) Len() int { return len(v.frames) }

// Load writes frame i as planar sRGB values in [0,1] and its mask (0 or 1).
func (v *DAVISVideo) Load(i int, rgb, alpha []float32) error {
	if i < 0 || i >= len(v.frames) {
		return fmt.Errorf("bench: %s: frame %d of %d", v.name, i, len(v.frames))
	}
	n := v.w * v.h
	f := v.frames[i]
	for p := 0; p < n; p++ {
		rgb[p] = float32(f[3*p]) / 255
		rgb[n+p] = float32(f[3*p+1]) / 255
		rgb[2*n+p] = float32(f[3*p+2]) / 255
	}
	if alpha == nil {
		return nil
	}
	return loadMask(v.masks[i], v.w, v.h, alpha)
}

// loadMask reads a mask PNG of w x h into alpha (1 where not 0).
func loadMask(path string, w, h int, alpha []float32) error {
	mk, err := readImage(path)
	if err != nil {
		return err
	}
	if b := mk.Bounds(); b.Dx() != w || b.Dy() != h {
		return fmt.Errorf("bench: mask %s is %dx%d, the sequence is %dx%d", path, b.Dx(), b.Dy(), w, h)
	}
	gray := image.NewGray(image.Rect(0, 0, w, h))
	draw.Draw(gray, gray.Bounds(), mk, mk.Bounds().Min, draw.Src)
	for p := range alpha[:w*h] {
		alpha[p] = 0
		if gray.Pix[p] != 0 {
			alpha[p] = 1
		}
	}
	return nil
}
