package bench

import (
	"fmt"
	"image"
	"image/draw"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// DAVISClip is a sequence in the DAVIS layout: JPEG frames and PNG masks
// in two folders, named by frame number (00000.jpg, 00000.png, ...). A
// mask pixel is foreground when it is not 0 (DAVIS masks are {0,255}).
type DAVISClip struct {
	name          string
	frames, masks []string
	w, h          int
}

// numbered lists the files of dir with extension ext (any case) whose base
// name is a frame number, in number order.
func numbered(dir string, exts ...string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	type f struct {
		n    int
		path string
	}
	var fs []f
	for _, e := range ents {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		ok := false
		for _, x := range exts {
			ok = ok || ext == x
		}
		if !ok || e.IsDir() {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSuffix(e.Name(), filepath.Ext(e.Name())))
		if err != nil {
			continue
		}
		fs = append(fs, f{n, filepath.Join(dir, e.Name())})
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i].n < fs[j].n })
	out := make([]string, len(fs))
	for i, x := range fs {
		out[i] = x.path
	}
	return out, nil
}

// OpenDAVIS opens a sequence: framesDir holds NNNNN.jpg, masksDir
// NNNNN.png, the same numbers and sizes.
func OpenDAVIS(framesDir, masksDir string) (*DAVISClip, error) {
	fr, err := numbered(framesDir, ".jpg", ".jpeg")
	if err != nil {
		return nil, err
	}
	ms, err := numbered(masksDir, ".png")
	if err != nil {
		return nil, err
	}
	if len(fr) == 0 {
		return nil, fmt.Errorf("bench: no numbered JPEG frames in %s", framesDir)
	}
	if len(ms) != len(fr) {
		return nil, fmt.Errorf("bench: %d frames in %s but %d masks in %s", len(fr), framesDir, len(ms), masksDir)
	}
	for i := range fr {
		a := strings.TrimSuffix(filepath.Base(fr[i]), filepath.Ext(fr[i]))
		b := strings.TrimSuffix(filepath.Base(ms[i]), filepath.Ext(ms[i]))
		if a != b {
			return nil, fmt.Errorf("bench: frame %s has no mask of the same number (found %s)", fr[i], ms[i])
		}
	}
	c := &DAVISClip{name: filepath.Base(filepath.Clean(framesDir)), frames: fr, masks: ms}
	im, err := readImage(fr[0])
	if err != nil {
		return nil, err
	}
	c.w, c.h = im.Bounds().Dx(), im.Bounds().Dy()
	return c, nil
}

func readImage(path string) (image.Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var im image.Image
	if strings.HasSuffix(strings.ToLower(path), ".png") {
		im, err = png.Decode(f)
	} else {
		im, err = jpeg.Decode(f)
	}
	if err != nil {
		return nil, fmt.Errorf("bench: %s: %w", path, err)
	}
	return im, nil
}

// Name is the frames folder's name.
func (c *DAVISClip) Name() string { return c.name }

// Size is the first frame's size.
func (c *DAVISClip) Size() (int, int) { return c.w, c.h }

// Len is the number of frames.
func (c *DAVISClip) Len() int { return len(c.frames) }

// Load reads frame i and its mask.
func (c *DAVISClip) Load(i int, rgb, alpha []float32) error {
	im, err := readImage(c.frames[i])
	if err != nil {
		return err
	}
	mk, err := readImage(c.masks[i])
	if err != nil {
		return err
	}
	for _, x := range []image.Image{im, mk} {
		if b := x.Bounds(); b.Dx() != c.w || b.Dy() != c.h {
			return fmt.Errorf("bench: frame %d is %dx%d, the sequence is %dx%d", i, b.Dx(), b.Dy(), c.w, c.h)
		}
	}
	n := c.w * c.h
	rgba := image.NewRGBA(image.Rect(0, 0, c.w, c.h))
	draw.Draw(rgba, rgba.Bounds(), im, im.Bounds().Min, draw.Src)
	gray := image.NewGray(image.Rect(0, 0, c.w, c.h))
	draw.Draw(gray, gray.Bounds(), mk, mk.Bounds().Min, draw.Src)
	for p := 0; p < n; p++ {
		rgb[p] = float32(rgba.Pix[4*p]) / 255
		rgb[n+p] = float32(rgba.Pix[4*p+1]) / 255
		rgb[2*n+p] = float32(rgba.Pix[4*p+2]) / 255
		if gray.Pix[p] != 0 {
			alpha[p] = 1
		} else {
			alpha[p] = 0
		}
	}
	return nil
}
