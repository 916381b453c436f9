package bench

import (
	"context"
	le "encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vfxrender/vfx/infer"
)

// Segmenter is a segmentation network (infer.Model).
type Segmenter interface {
	Segment(ctx context.Context, rgb []float32, w, h int, dst []float32) error
}

// FeatureSegmenter is a network that also gives its feature map
// (infer.Model.SegmentFeatures).
type FeatureSegmenter interface {
	SegmentFeatures(ctx context.Context, rgb []float32, w, h int, dst []float32) (infer.Features, error)
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
	// FeatRuns counts the runs made for features (not read from disk).
	FeatRuns int
	// WithFeatures makes Map, where it runs the network (a
	// FeatureSegmenter), keep that run's feature map too, as Features
	// would (in memory and on disk), so that a mode that reads both (the
	// memory of select) pays one run a frame, not two.
	WithFeatures bool
	mem          map[string][]float32
	feat         map[string]infer.Features
}

// Features returns the network's feature map of frame i of clip (the
// card's Features tensor), cached like Map's maps, in memory and under
// Dir/<Key>/<clip>/feat/NNNNN.f32 (three little-endian uint32, W, H and
// C, then the values). The network's map of that run is dropped: Map's
// stays the one that was cached first.
func (c *NetCache) Features(ctx context.Context, clip Clip, i int) (infer.Features, error) {
	id := fmt.Sprintf("%s/feat/%05d", clip.Name(), i)
	if f, ok := c.feat[id]; ok {
		return f, nil
	}
	if c.Dir != "" {
		if f, err := readFeatures(filepath.Join(c.Dir, c.Key, id+".f32")); err == nil {
			if c.feat == nil {
				c.feat = map[string]infer.Features{}
			}
			c.feat[id] = f
			return f, nil
		}
	}
	fs, ok := c.Net.(FeatureSegmenter)
	if !ok {
		return infer.Features{}, infer.ErrNoFeatures
	}
	w, h := clip.Size()
	rgb := make([]float32, 3*w*h)
	if err := clip.Load(i, rgb, nil); err != nil {
		return infer.Features{}, err
	}
	t0 := time.Now()
	f, err := fs.SegmentFeatures(ctx, rgb, w, h, make([]float32, w*h))
	if err != nil {
		return infer.Features{}, err
	}
	c.Spent += time.Since(t0)
	c.FeatRuns++
	return f, c.keepFeatures(id, f)
}

func readFeatures(path string) (infer.Features, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return infer.Features{}, err
	}
	if len(b) < 12 {
		return infer.Features{}, fmt.Errorf("bench: %s: short feature file", path)
	}
	f := infer.Features{W: int(le.LittleEndian.Uint32(b)), H: int(le.LittleEndian.Uint32(b[4:])), C: int(le.LittleEndian.Uint32(b[8:]))}
	n := f.W * f.H * f.C
	if n <= 0 || len(b) != 12+4*n {
		return infer.Features{}, fmt.Errorf("bench: %s: %d bytes for %dx%dx%d features", path, len(b), f.W, f.H, f.C)
	}
	f.Data = make([]float32, n)
	for k := range f.Data {
		f.Data[k] = math.Float32frombits(le.LittleEndian.Uint32(b[12+4*k:]))
	}
	return f, nil
}

func writeFeatures(path string, f infer.Features) error {
	b := make([]byte, 12+4*len(f.Data))
	le.LittleEndian.PutUint32(b, uint32(f.W))
	le.LittleEndian.PutUint32(b[4:], uint32(f.H))
	le.LittleEndian.PutUint32(b[8:], uint32(f.C))
	for k, v := range f.Data {
		le.LittleEndian.PutUint32(b[12+4*k:], math.Float32bits(v))
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
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
		fs, ok := c.Net.(FeatureSegmenter)
		if !c.WithFeatures || !ok {
			return c.Net.Segment(ctx, rgb, w, h, m)
		}
		f, err := fs.SegmentFeatures(ctx, rgb, w, h, m)
		if errors.Is(err, infer.ErrNoFeatures) {
			return c.Net.Segment(ctx, rgb, w, h, m)
		}
		if err != nil {
			return err
		}
		return c.keepFeatures(fmt.Sprintf("%s/feat/%05d", clip.Name(), i), f)
	})
}

// keepFeatures keeps feature map id in memory and, with Dir, on disk.
func (c *NetCache) keepFeatures(id string, f infer.Features) error {
	if c.feat == nil {
		c.feat = map[string]infer.Features{}
	}
	c.feat[id] = f
	if c.Dir == "" {
		return nil
	}
	return writeFeatures(filepath.Join(c.Dir, c.Key, id+".f32"), f)
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
	pre = clip.Name() + "/feat/"
	for id := range c.feat {
		if strings.HasPrefix(id, pre) {
			delete(c.feat, id)
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
