package bench

import (
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Segmenter is a segmentation network (infer.Model).
type Segmenter interface {
	Segment(ctx context.Context, rgb []float32, w, h int, dst []float32) error
}

// NetCache runs a network on clip frames at the clip's size, remembering
// each map in memory and, when Dir is set, on disk as 8-bit PNG under
// Dir/<Key>/<clip>/NNNNN.png (Key names the model: its sha256), so that
// several modes and runs of a benchmark pay for the network once.
type NetCache struct {
	Net Segmenter
	Dir string
	Key string
	// Runs and Spent count the network runs made (not read from disk) and their time.
	Runs  int
	Spent time.Duration
	// CropRuns and CropSpent count the runs on crops (CropMap) made (not
	// read from disk) and their time; Crops counts every crop asked for.
	CropRuns  int
	CropSpent time.Duration
	Crops     int
	mem       map[string][]float32
}

// CropMap returns the network's map of the part [x0,x1) x [y0,y1) (clip
// pixels) of frame i of clip, the network zooming the part to its input
// size: (x1-x0)*(y1-y0) values in [0,1]. The maps are cached like Map's,
// keyed by clip, frame and box (Dir/<Key>/<clip>/crop/NNNNN-x0-y0-x1-y1.png).
func (c *NetCache) CropMap(ctx context.Context, clip Clip, i, x0, y0, x1, y1 int) ([]float32, error) {
	w, h := clip.Size()
	if x0 < 0 || y0 < 0 || x1 > w || y1 > h || x1 <= x0 || y1 <= y0 {
		return nil, fmt.Errorf("bench: crop [%d,%d)x[%d,%d) of a %dx%d frame", x0, x1, y0, y1, w, h)
	}
	c.Crops++
	cw, ch := x1-x0, y1-y0
	id := fmt.Sprintf("%s/crop/%05d-%d-%d-%d-%d", clip.Name(), i, x0, y0, x1, y1)
	return c.cached(id, cw, ch, &c.CropRuns, &c.CropSpent, func(m []float32) error {
		rgb := make([]float32, 3*w*h)
		if err := clip.Load(i, rgb, nil); err != nil {
			return err
		}
		n := cw * ch
		crop := make([]float32, 3*n)
		for ch0 := 0; ch0 < 3; ch0++ {
			for y := 0; y < ch; y++ {
				copy(crop[ch0*n+y*cw:ch0*n+(y+1)*cw], rgb[ch0*w*h+(y0+y)*w+x0:ch0*w*h+(y0+y)*w+x1])
			}
		}
		return c.Net.Segment(ctx, crop, cw, ch, m)
	})
}

// Map returns the network's map of frame i of clip (w*h values in [0,1]).
func (c *NetCache) Map(ctx context.Context, clip Clip, i int) ([]float32, error) {
	w, h := clip.Size()
	id := fmt.Sprintf("%s/%05d", clip.Name(), i)
	return c.cached(id, w, h, &c.Runs, &c.Spent, func(m []float32) error {
		rgb := make([]float32, 3*w*h)
		if err := clip.Load(i, rgb, nil); err != nil {
			return err
		}
		return c.Net.Segment(ctx, rgb, w, h, m)
	})
}

// cached returns the map id (w x h) from memory, else from Dir, else
// runs run on a new map (counted in runs and spent) and keeps it in
// both.
func (c *NetCache) cached(id string, w, h int, runs *int, spent *time.Duration, run func(m []float32) error) ([]float32, error) {
	if m, ok := c.mem[id]; ok {
		return m, nil
	}
	if c.mem == nil {
		c.mem = map[string][]float32{}
	}
	path := ""
	if c.Dir != "" {
		path = filepath.Join(c.Dir, c.Key, id+".png")
		if m, err := readMap(path, w, h); err == nil {
			c.mem[id] = m
			return m, nil
		}
	}
	m := make([]float32, w*h)
	t0 := time.Now()
	if err := run(m); err != nil {
		return nil, err
	}
	*spent += time.Since(t0)
	*runs++
	c.mem[id] = m
	if path != "" {
		if err := writeMap(path, m, w, h); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Forget drops the in-memory maps of a clip (crops included).
func (c *NetCache) Forget(clip Clip) {
	for i := 0; i < clip.Len(); i++ {
		delete(c.mem, fmt.Sprintf("%s/%05d", clip.Name(), i))
	}
	pre := clip.Name() + "/crop/"
	for id := range c.mem {
		if strings.HasPrefix(id, pre) {
			delete(c.mem, id)
		}
	}
}

func readMap(path string, w, h int) ([]float32, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	im, err := png.Decode(f)
	if err != nil {
		return nil, err
	}
	g, ok := im.(*image.Gray)
	if !ok || g.Rect.Dx() != w || g.Rect.Dy() != h {
		return nil, fmt.Errorf("bench: %s: not a %dx%d grey map", path, w, h)
	}
	m := make([]float32, w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			m[y*w+x] = float32(g.Pix[y*g.Stride+x]) / 255
		}
	}
	return m, nil
}

func writeMap(path string, m []float32, w, h int) error {
	g := image.NewGray(image.Rect(0, 0, w, h))
	for i, v := range m {
		g.Pix[i] = uint8(min(max(v, 0), 1)*255 + 0.5)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := png.Encode(f, g); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
