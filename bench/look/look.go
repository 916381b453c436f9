package look

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strings"

	"github.com/vfxrender/vfx/bench"
	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/internal/srgb"
	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/matte"
	"github.com/vfxrender/vfx/render"
)

// Subjects are the DAVIS-2016 train sequences of people and animals
// that `vfx bench look` renders (first frame, hand-made mask).
var Subjects = []string{
	"bear", "breakdance-flare", "dance-jump", "dog-agility", "elephant", "flamingo",
	"hike", "lucia", "rhino", "tennis",
}

// ReferenceClip is the sequence whose first frame is the reference image of
// the reference prompt (a beach: sea, surf and sky).
const ReferenceClip = "surf"

// Measure names what a prompt's row reports.
type Measure int

const (
	// MeasureLeft: lit half (left) over the other half, relight gain.
	MeasureLeft Measure = iota
	// MeasureRight: right half over left half.
	MeasureRight
	// MeasureAbove: top half over bottom half.
	MeasureAbove
	// MeasureRim: edge band (4 px) over interior, relight gain.
	MeasureRim
	// MeasureNight: subject mean luminance over the background's.
	MeasureNight
	// MeasureReference: subject mean luminance over the reference's.
	MeasureReference
	// MeasureShadow: darkening under the subject's lowest points and the
	// cast shadow's side.
	MeasureShadow
)

// Prompt is one fixed prompt of the bench.
type Prompt struct {
	Prompt    string
	Reference bool // use the reference image (RefClip's first frame)
	// RefClip is the clip whose first frame is the reference ("" =
	// ReferenceClip).
	RefClip string
	Measure Measure
	// Night marks a night prompt (the night check, looknight.go); KeyLeft
	// a night prompt with a key from the left (its direction is checked).
	Night, KeyLeft bool
}

// refClip is the clip of the prompt's reference image.
func (lp Prompt) refClip() string {
	if lp.RefClip == "" {
		return ReferenceClip
	}
	return lp.RefClip
}

// WarmReferenceClip is the clip whose first frame is the warm reference
// plate of the colour check (an orange clay court under sun).
const WarmReferenceClip = "tennis"

// Prompts are the bench's fixed prompts.
var Prompts = []Prompt{
	{Prompt: "strong light from the left", Measure: MeasureLeft},
	{Prompt: "strong light from the right", Measure: MeasureRight},
	{Prompt: "light from above", Measure: MeasureAbove},
	{Prompt: "backlit rim light", Measure: MeasureRim},
	{Prompt: "dark night, moonlight", Measure: MeasureNight, Night: true},
	{Prompt: "low-key dramatic light from the left", Measure: MeasureNight},
	{Prompt: "", Reference: true, Measure: MeasureReference},
	{Prompt: "sunny beach, hard sun from the left", Measure: MeasureShadow},
	{Prompt: "", Reference: true, RefClip: WarmReferenceClip, Measure: MeasureReference},
	{Prompt: "night, moonlight from the left", Measure: MeasureNight, Night: true, KeyLeft: true},
}

// Options configure Run.
type Options struct {
	// Dataset is the davis2016-train folder (source.mp4 + masks/ per
	// sequence).
	Dataset string
	// Subjects are sequence names; empty means Subjects.
	Subjects []string
	// VideoFrames is the number of frames per subject of the flicker
	// check (0 = 12; below 2 skips it).
	VideoFrames int
	// Workers is the CPU device's thread count (0 = all cores).
	Workers int
	// Sheet, when set, is the path of a contact sheet PNG.
	Sheet string // (the placement check adds its renders as the last columns)
	// Seed is the render seed.
	Seed uint32
	// NoPlateMatch renders without plate matching (render.Params), for
	// the before figures; NoFocusMatch without matched focus.
	NoPlateMatch bool
	NoFocusMatch bool
	// CameraClips are the clips of the camera-lock check (nil means
	// CameraClips; empty and non-nil skips it); CameraFrames the
	// frames per clip (0 = 16); NoCameraLock renders with a still plate,
	// for the before figures.
	CameraClips  []string
	CameraFrames int
	NoCameraLock bool
	// ContactReach is render.Params.ContactReach (0: the renderer's
	// default).
	ContactReach float64
	// NoPlacement skips the placement check (place.go).
	NoPlacement bool
}

// Row is one prompt's result: the measure per subject and its median.
type Row struct {
	Prompt  Prompt
	Values  []float64 // per subject (NaN where the measure is undefined)
	Median  float64
	Values2 []float64 // shadow: darkening away from the key minus toward it; rim: rimSide
	Median2 float64
	// Hue: the subject's hue shift per subject (degrees, lookcolour.go)
	// and its median.
	Hue  []float64
	MHue float64
	// Night prompts (looknight.go): readability and, with a key from the
	// left, its left/right ratio, per subject and their medians.
	Read, Dir   []float64
	MRead, MDir float64
}

// Report is the bench's result.
type Report struct {
	Subjects []string
	Rows     []Row
	// FGErrSource and FGErrEstimate are the median over subjects of the
	// edge band's mean colour error against the nearby interior colours,
	// with the source colour and with render.EstimateForeground.
	FGErrSource, FGErrEstimate float64
	FGValues                   [][2]float64
	// Flicker: median over subjects of the mean relative frame-to-frame
	// change of the subject's mean gain, and of its source luminance.
	GainFlicker, SourceFlicker float64
	FlickerValues              [][2]float64
	// Plates: grain, sharpness and black level of the subject against the
	// plate on the reference and the beach backdrop (plate.go).
	Plates []PlateRow
	// Edges: halo, bleed and contact on the passes (edge.go), one row
	// per measured prompt in Prompts' order.
	Edges []EdgeRow
	// Place: the placement check per placement (place.go), nil when
	// Options.NoPlacement.
	Place []PlaceRow
	// Camera: the camera-lock check per clip (camera.go).
	Camera       []CameraRow
	CameraFrames int
}

// lookSubject is one decoded subject: linear RGB, soft matte, binary mask.
type lookSubject struct {
	name  string
	w, h  int
	src   []float32 // planar linear RGB
	alpha []float32 // soft matte (guided-filter refinement of the mask)
	host  *frame.HostFrame
}

// decodeFrames decodes the first n frames of a video as RGB24.
func decodeFrames(ctx context.Context, path string, n int) ([]*frame.HostFrame, error) {
	d, err := codec.NewDecoder(ctx, codec.FileInput(path), codec.DefaultLimits(), codec.DecodeOptions{Format: frame.RGB24})
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var out []*frame.HostFrame
	for len(out) < n {
		f := &frame.HostFrame{}
		if err := d.Next(ctx, f); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, err
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("bench: no frames in %s", path)
	}
	return out, nil
}

// readMask reads a DAVIS mask PNG as {0,1}.
func readMask(path string, w, h int) ([]float32, error) {
	img, err := bench.ReadImage(path)
	if err != nil {
		return nil, err
	}
	b := img.Bounds()
	if b.Dx() != w || b.Dy() != h {
		return nil, fmt.Errorf("bench: mask %s is %dx%d, frame %dx%d", path, b.Dx(), b.Dy(), w, h)
	}
	m := make([]float32, w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			r, g, bb, _ := img.At(b.Min.X+x, b.Min.Y+y).RGBA()
			if r+g+bb > 0 {
				m[y*w+x] = 1
			}
		}
	}
	return m, nil
}

// softMatte makes a soft matte from a binary mask: half-resolution area
// average, bilinear back up, then the guided filter with the frame's luma
// as the guide (matte.Refiner's steps before session 21, which guides by
// colour; kept so that the look's figures compare across sessions),
// clamped.
func softMatte(dev kernels.Device, src kernels.Image, mask []float32, w, h int) ([]float32, error) {
	ops := dev.Ops()
	var imgs []kernels.Image
	defer func() {
		for _, im := range imgs {
			dev.Free(im)
		}
	}()
	alloc := func(w, h, c int) kernels.Image {
		im, err := dev.NewImage(w, h, c)
		if err != nil {
			return nil
		}
		imgs = append(imgs, im)
		return im
	}
	m, low, up, guide, out := alloc(w, h, 1), alloc(max(1, w/2), max(1, h/2), 1), alloc(w, h, 1), alloc(w, h, 1), alloc(w, h, 1)
	if out == nil {
		return nil, errors.New("bench: allocate")
	}
	if err := dev.WritePixels(m, mask); err != nil {
		return nil, err
	}
	for _, err := range []error{ops.ResizeArea(low, m), ops.ResizeBilinear(up, low), ops.Luma(guide, src),
		ops.GuidedFilter(out, guide, up, max(2, 2*w/(w/2)), 2e-4)} {
		if err != nil {
			return nil, err
		}
	}
	a, err := dev.ReadPixels(out)
	if err != nil {
		return nil, err
	}
	for i, v := range a {
		a[i] = min(max(v, 0), 1)
	}
	return a, nil
}

func loadSubject(ctx context.Context, dev kernels.Device, dir string, f *frame.HostFrame, maskPath string) (*lookSubject, error) {
	s := &lookSubject{name: filepath.Base(dir), w: f.Width, h: f.Height, host: f}
	img, err := dev.NewImage(f.Width, f.Height, 3)
	if err != nil {
		return nil, err
	}
	defer dev.Free(img)
	if err := dev.Upload(img, f); err != nil {
		return nil, err
	}
	if s.src, err = dev.ReadPixels(img); err != nil {
		return nil, err
	}
	mask, err := readMask(maskPath, f.Width, f.Height)
	if err != nil {
		return nil, err
	}
	if s.alpha, err = softMatte(dev, img, mask, f.Width, f.Height); err != nil {
		return nil, err
	}
	return s, nil
}

// renderOne renders one frame and returns the linear RGB output.
func renderOne(ctx context.Context, dev kernels.Device, r *render.Renderer, s *lookSubject, alpha []float32) ([]float32, error) {
	w, h := s.w, s.h
	src, err := dev.NewImage(w, h, 3)
	if err != nil {
		return nil, err
	}
	defer dev.Free(src)
	a, err := dev.NewImage(w, h, 1)
	if err != nil {
		return nil, err
	}
	defer dev.Free(a)
	dst, err := dev.NewImage(w, h, 3)
	if err != nil {
		return nil, err
	}
	defer dev.Free(dst)
	if err := dev.WritePixels(src, s.src); err != nil {
		return nil, err
	}
	if err := dev.WritePixels(a, alpha); err != nil {
		return nil, err
	}
	if err := r.Frame(ctx, dst, src, a); err != nil {
		return nil, err
	}
	return dev.ReadPixels(dst)
}

func luma(p []float32, n int) []float64 {
	y := make([]float64, n)
	for i := range y {
		y[i] = 0.2126*float64(p[i]) + 0.7152*float64(p[n+i]) + 0.0722*float64(p[2*n+i])
	}
	return y
}

// insideDist is the Euclidean distance (pixels) of each subject pixel
// (alpha >= 0.5) to the nearest non-subject pixel; 0 outside.
func insideDist(dev kernels.Device, alpha []float32, w, h int) ([]float32, error) {
	a, err := dev.NewImage(w, h, 1)
	if err != nil {
		return nil, err
	}
	defer dev.Free(a)
	d, err := dev.NewImage(w, h, 1)
	if err != nil {
		return nil, err
	}
	defer dev.Free(d)
	if err := dev.WritePixels(a, alpha); err != nil {
		return nil, err
	}
	if err := dev.Ops().DistanceTransform(d, a, 0.5); err != nil {
		return nil, err
	}
	return dev.ReadPixels(d)
}

// gainRatio is (sum out / sum src over sel1) / (same over sel2).
func gainRatio(yo, ys []float64, sel1, sel2 func(i int) bool) float64 {
	var o1, s1, o2, s2 float64
	for i := range yo {
		if sel1(i) {
			o1 += yo[i]
			s1 += ys[i]
		}
		if sel2(i) {
			o2 += yo[i]
			s2 += ys[i]
		}
	}
	if s1 <= 0 || s2 <= 0 || o2 <= 0 {
		return math.NaN()
	}
	return (o1 / s1) / (o2 / s2)
}

// lookMeasure computes a prompt's measure on one subject's render.
func lookMeasure(m Measure, s *lookSubject, out, plate []float32, dist []float32, refLum float64) (v, v2 float64) {
	w, h := s.w, s.h
	n := w * h
	ys, yo := luma(s.src, n), luma(out, n)
	a := s.alpha
	c, ok := matte.Centroid(a, w)
	if !ok {
		return math.NaN(), math.NaN()
	}
	cx, cy := c[0], c[1]
	subj := func(i int) bool { return a[i] >= 0.99 }
	left := func(i int) bool { return subj(i) && float64(i%w) < cx }
	right := func(i int) bool { return subj(i) && float64(i%w) >= cx }
	top := func(i int) bool { return subj(i) && float64(i/w) < cy }
	bottom := func(i int) bool { return subj(i) && float64(i/w) >= cy }
	switch m {
	case MeasureLeft:
		return gainRatio(yo, ys, left, right), math.NaN()
	case MeasureRight:
		return gainRatio(yo, ys, right, left), math.NaN()
	case MeasureAbove:
		return gainRatio(yo, ys, top, bottom), math.NaN()
	case MeasureRim:
		band := func(i int) bool { return a[i] >= 0.5 && dist[i] > 0 && dist[i] <= 4 }
		inner := func(i int) bool { return dist[i] > 4 }
		return gainRatio(yo, ys, band, inner), math.NaN()
	case MeasureNight, MeasureReference:
		var so, sw, bo, bw float64
		for i := range yo {
			if a[i] >= 0.5 {
				so += yo[i]
				sw++
			} else {
				bo += yo[i]
				bw++
			}
		}
		if sw == 0 || bw == 0 {
			return math.NaN(), math.NaN()
		}
		if m == MeasureReference {
			return (so / sw) / refLum, math.NaN()
		}
		return (so / sw) / (bo / bw), math.NaN()
	case MeasureShadow:
		return shadowMeasure(s, yo, luma(plate, n))
	}
	return math.NaN(), math.NaN()
}

// shadowMeasure returns the darkening (1 - out/plate) of the background
// just under the subject's lowest points (the columns whose lowest subject
// pixel is within 5% of the height of the lowest one, the 3% of the height
// below it), and the darkening beside the subject's lower fifth on the
// right minus on the left (the side away from a key from the left minus
// the side toward it). NaN when the subject touches the bottom edge.
func shadowMeasure(s *lookSubject, yo, yp []float64) (float64, float64) {
	w, h := s.w, s.h
	a := s.alpha
	low := make([]int, w)
	ymax, x0, x1 := -1, w, -1
	for x := 0; x < w; x++ {
		low[x] = -1
		for y := h - 1; y >= 0; y-- {
			if a[y*w+x] >= 0.5 {
				low[x] = y
				break
			}
		}
		if low[x] >= 0 {
			ymax = max(ymax, low[x])
			x0, x1 = min(x0, x), max(x1, x)
		}
	}
	k := max(3, h*3/100)
	if ymax < 0 || ymax+k >= h {
		return math.NaN(), math.NaN()
	}
	var so, sp float64
	for x := 0; x < w; x++ {
		if low[x] < 0 || low[x] < ymax-h/20 {
			continue
		}
		for y := low[x] + 2; y < min(h, low[x]+2+k); y++ {
			if a[y*w+x] < 0.05 {
				so += yo[y*w+x]
				sp += yp[y*w+x]
			}
		}
	}
	if sp <= 0 {
		return math.NaN(), math.NaN()
	}
	under := 1 - so/sp
	// Beside the subject's lower fifth, within a sixth of the width.
	side := func(xa, xb int) float64 {
		var o, p float64
		y0 := ymax - max(1, (ymax-topOf(a, w, h))/5)
		for y := max(0, y0); y <= min(h-1, ymax+k); y++ {
			for x := max(0, xa); x < min(w, xb); x++ {
				if a[y*w+x] < 0.05 {
					o += yo[y*w+x]
					p += yp[y*w+x]
				}
			}
		}
		if p <= 0 {
			return 0
		}
		return 1 - o/p
	}
	return under, side(x1+1, x1+1+w/6) - side(x0-w/6, x0)
}

func topOf(a []float32, w, h int) int {
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if a[y*w+x] >= 0.5 {
				return y
			}
		}
	}
	return 0
}

// foregroundError is the mean colour error (linear RGB, Euclidean) of the
// soft band (0.05 < alpha < 0.95) against the mean of the interior pixels
// (alpha >= 0.99) within 7 px, for the foreground colours fg (planar).
// Band pixels with no interior pixel within reach are left out.
func foregroundError(s *lookSubject, fg []float32) float64 {
	w, h := s.w, s.h
	n := w * h
	a := s.alpha
	const r = 7
	// Box sums of the interior colours and counts via integral images.
	in := make([]float64, (w+1)*(h+1)*4)
	idx := func(x, y, c int) int { return ((y*(w+1))+x)*4 + c }
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i := y*w + x
			var v [4]float64
			if a[i] >= 0.99 {
				v = [4]float64{float64(s.src[i]), float64(s.src[n+i]), float64(s.src[2*n+i]), 1}
			}
			for c := 0; c < 4; c++ {
				in[idx(x+1, y+1, c)] = v[c] + in[idx(x, y+1, c)] + in[idx(x+1, y, c)] - in[idx(x, y, c)]
			}
		}
	}
	var sum float64
	var cnt int
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i := y*w + x
			if a[i] <= 0.05 || a[i] >= 0.95 {
				continue
			}
			xa, xb, ya, yb := max(0, x-r), min(w, x+r+1), max(0, y-r), min(h, y+r+1)
			box := func(c int) float64 {
				return in[idx(xb, yb, c)] - in[idx(xa, yb, c)] - in[idx(xb, ya, c)] + in[idx(xa, ya, c)]
			}
			k := box(3)
			if k < 1 {
				continue
			}
			var e float64
			for c := 0; c < 3; c++ {
				d := float64(fg[c*n+i]) - box(c)/k
				e += d * d
			}
			sum += math.Sqrt(e)
			cnt++
		}
	}
	if cnt == 0 {
		return math.NaN()
	}
	return sum / float64(cnt)
}

func median(v []float64) float64 {
	var f []float64
	for _, x := range v {
		if !math.IsNaN(x) {
			f = append(f, x)
		}
	}
	if len(f) == 0 {
		return math.NaN()
	}
	sort.Float64s(f)
	if len(f)%2 == 1 {
		return f[len(f)/2]
	}
	return (f[len(f)/2-1] + f[len(f)/2]) / 2
}

// Run renders Prompts on the first frame of each subject with its
// mask (made soft as the pipeline does), measures each prompt, checks
// foreground estimation on the soft band and the gain's flicker over the
// first frames, and writes the contact sheet when asked.
func Run(ctx context.Context, opt Options) (*Report, error) {
	subjects := opt.Subjects
	if len(subjects) == 0 {
		subjects = Subjects
	}
	nv := opt.VideoFrames
	if nv == 0 {
		nv = 12
	}
	dev := kernels.NewCPU(opt.Workers)
	defer dev.Close()

	refs := map[string]lookRef{}
	var err error
	for _, lp := range Prompts {
		if c := lp.refClip(); lp.Reference && refs[c].frame == nil {
			if refs[c], err = loadRef(ctx, dev, opt.Dataset, c); err != nil {
				return nil, err
			}
		}
	}
	ref := refs[ReferenceClip].frame
	rep := &Report{Subjects: subjects, Rows: make([]Row, len(Prompts)), Plates: make([]PlateRow, 2)}
	for _, lp := range Prompts {
		if k, name := lookPlateIndex(lp); k >= 0 {
			rep.Plates[k].Name = name
		}
	}
	for i := range rep.Rows {
		rep.Rows[i].Prompt = Prompts[i]
	}
	var edgeIndex []int
	rep.Edges, edgeIndex = newEdgeRows()
	var sheet [][]*thumb
	for _, name := range subjects {
		dir := filepath.Join(opt.Dataset, name)
		frames, err := decodeFrames(ctx, filepath.Join(dir, "source.mp4"), max(1, nv))
		if err != nil {
			return nil, err
		}
		s, err := loadSubject(ctx, dev, dir, frames[0], filepath.Join(dir, "masks", "00000.png"))
		if err != nil {
			return nil, fmt.Errorf("bench: %s: %w", name, err)
		}
		dist, err := insideDist(dev, s.alpha, s.w, s.h)
		if err != nil {
			return nil, err
		}
		outDist, err := outsideDist(dev, s.alpha, s.w, s.h)
		if err != nil {
			return nil, err
		}
		row := []*thumb{makeThumb(s.src, s.w, s.h)}
		zero := make([]float32, s.w*s.h)
		for pi, lp := range Prompts {
			p := render.Params{Prompt: lp.Prompt, Seed: opt.Seed, Width: s.w, Height: s.h, NoPlateMatch: opt.NoPlateMatch, NoFocusMatch: opt.NoFocusMatch,
				ContactReach: opt.ContactReach}
			if lp.Reference {
				p.Reference = refs[lp.refClip()].frame
			}
			r, err := render.New(ctx, dev, p)
			if err != nil {
				return nil, err
			}
			out, err := renderOne(ctx, dev, r, s, s.alpha)
			r.Close()
			if err != nil {
				return nil, err
			}
			var plate []float32
			if lp.Measure == MeasureShadow {
				r, err := render.New(ctx, dev, p)
				if err != nil {
					return nil, err
				}
				plate, err = renderOne(ctx, dev, r, s, zero)
				r.Close()
				if err != nil {
					return nil, err
				}
			}
			v, v2 := lookMeasure(lp.Measure, s, out, plate, dist, refs[lp.refClip()].lum)
			if lp.Measure == MeasureRim {
				v2 = rimSide(lp.Prompt, s, out, dist)
			}
			rep.Rows[pi].Hue = append(rep.Rows[pi].Hue, hueShift(s.src, out, s.alpha, s.w*s.h))
			if lp.Night {
				rep.Rows[pi].Read = append(rep.Rows[pi].Read, nightRead(luma(out, s.w*s.h), s.alpha))
			}
			if lp.KeyLeft {
				v, _ := lookMeasure(MeasureLeft, s, out, nil, dist, 0)
				rep.Rows[pi].Dir = append(rep.Rows[pi].Dir, v)
			}
			if k, _ := lookPlateIndex(lp); k >= 0 {
				g, sh, bl := plateMeasure(s, out)
				pr := &rep.Plates[k]
				pr.Grain, pr.Sharp, pr.Black = append(pr.Grain, g), append(pr.Sharp, sh), append(pr.Black, bl)
			}
			if k := edgeIndex[pi]; k >= 0 {
				v, err := edgeMeasure(ctx, dev, p, s, dist, outDist)
				if err != nil {
					return nil, fmt.Errorf("bench: %s: edges: %w", name, err)
				}
				e := &rep.Edges[k]
				e.Halo, e.Bleed, e.Contact = append(e.Halo, v.Halo), append(e.Bleed, v.Bleed), append(e.Contact, v.Contact)
				e.HaloWrap, e.HaloRelight = append(e.HaloWrap, v.HaloWrap), append(e.HaloRelight, v.HaloRelight)
			}
			rep.Rows[pi].Values = append(rep.Rows[pi].Values, v)
			rep.Rows[pi].Values2 = append(rep.Rows[pi].Values2, v2)
			row = append(row, makeThumb(out, s.w, s.h))
		}
		// Foreground estimation on the soft band.
		fg, err := render.EstimateForeground(ctx, dev, s.src, s.alpha, s.w, s.h)
		if err != nil {
			return nil, err
		}
		e0, e1 := foregroundError(s, s.src), foregroundError(s, fg)
		rep.FGValues = append(rep.FGValues, [2]float64{e0, e1})
		// Flicker over the first frames, key from the left.
		if len(frames) >= 2 && nv >= 2 {
			gf, sf, err := lookFlicker(ctx, dev, frames, dir, opt.Seed)
			if err != nil {
				return nil, fmt.Errorf("bench: %s: %w", name, err)
			}
			rep.FlickerValues = append(rep.FlickerValues, [2]float64{gf, sf})
		}
		if !opt.NoPlacement {
			th, err := runPlace(ctx, dev, opt, s, rep)
			if err != nil {
				return nil, err
			}
			row = append(row, th...)
		}
		sheet = append(sheet, row)
	}
	for i := range rep.Place {
		rep.Place[i].finish()
	}
	for i := range rep.Rows {
		rep.Rows[i].Median = median(rep.Rows[i].Values)
		rep.Rows[i].Median2 = median(rep.Rows[i].Values2)
		rep.Rows[i].MHue = median(rep.Rows[i].Hue)
		rep.Rows[i].MRead, rep.Rows[i].MDir = median(rep.Rows[i].Read), median(rep.Rows[i].Dir)
	}
	var e0, e1, g0, g1 []float64
	for _, v := range rep.FGValues {
		e0, e1 = append(e0, v[0]), append(e1, v[1])
	}
	for _, v := range rep.FlickerValues {
		g0, g1 = append(g0, v[0]), append(g1, v[1])
	}
	rep.FGErrSource, rep.FGErrEstimate = median(e0), median(e1)
	rep.GainFlicker, rep.SourceFlicker = median(g0), median(g1)
	for i := range rep.Plates {
		rep.Plates[i].finish()
	}
	for i := range rep.Edges {
		rep.Edges[i].finish()
	}
	if err := runCamera(ctx, dev, opt, ref, rep); err != nil {
		return nil, err
	}
	for _, c := range rep.Camera {
		sheet = append(sheet, c.thumbs)
	}
	if opt.Sheet != "" {
		if err := writeSheet(opt.Sheet, sheet); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// lookRef is a reference plate: its first frame and mean luminance.
type lookRef struct {
	frame *frame.HostFrame
	lum   float64
}

func loadRef(ctx context.Context, dev kernels.Device, dataset, clip string) (lookRef, error) {
	frames, err := decodeFrames(ctx, filepath.Join(dataset, clip, "source.mp4"), 1)
	if err != nil {
		return lookRef{}, err
	}
	ref := frames[0]
	img, err := dev.NewImage(ref.Width, ref.Height, 3)
	if err != nil {
		return lookRef{}, err
	}
	defer dev.Free(img)
	if err := dev.Upload(img, ref); err != nil {
		return lookRef{}, err
	}
	p, err := dev.ReadPixels(img)
	if err != nil {
		return lookRef{}, err
	}
	var lum float64
	y := luma(p, ref.Width*ref.Height)
	for _, v := range y {
		lum += v
	}
	return lookRef{frame: ref, lum: lum / float64(len(y))}, nil
}

// lookFlicker renders the frames as one video job ("strong light from the
// left") and returns the mean relative frame-to-frame change of the
// subject's mean gain (sum out / sum src luminance over alpha >= 0.5) and
// of its mean source luminance.
func lookFlicker(ctx context.Context, dev kernels.Device, frames []*frame.HostFrame, dir string, seed uint32) (float64, float64, error) {
	f0 := frames[0]
	r, err := render.New(ctx, dev, render.Params{Prompt: "strong light from the left", Seed: seed, Width: f0.Width, Height: f0.Height})
	if err != nil {
		return 0, 0, err
	}
	defer r.Close()
	var gains, lums []float64
	for i, f := range frames {
		s, err := loadSubject(ctx, dev, dir, f, filepath.Join(dir, "masks", fmt.Sprintf("%05d.png", i)))
		if err != nil {
			return 0, 0, err
		}
		out, err := renderOne(ctx, dev, r, s, s.alpha)
		if err != nil {
			return 0, 0, err
		}
		n := s.w * s.h
		ys, yo := luma(s.src, n), luma(out, n)
		var so, ss, sw float64
		for k := range ys {
			if s.alpha[k] >= 0.5 {
				so += yo[k]
				ss += ys[k]
				sw++
			}
		}
		if ss <= 0 {
			continue
		}
		gains = append(gains, so/ss)
		lums = append(lums, ss/sw)
	}
	rel := func(v []float64) float64 {
		if len(v) < 2 {
			return math.NaN()
		}
		var s float64
		for i := 1; i < len(v); i++ {
			s += math.Abs(v[i]/v[i-1] - 1)
		}
		return s / float64(len(v)-1)
	}
	return rel(gains), rel(lums), nil
}

// thumb is a quarter-size sRGB thumbnail.
type thumb struct {
	w, h int
	pix  []uint8 // RGB
}

func makeThumb(p []float32, w, h int) *thumb {
	const k = 4
	tw, th := w/k, h/k
	t := &thumb{w: tw, h: th, pix: make([]uint8, 3*tw*th)}
	n := w * h
	for y := 0; y < th; y++ {
		for x := 0; x < tw; x++ {
			for c := 0; c < 3; c++ {
				var s float64
				for dy := 0; dy < k; dy++ {
					for dx := 0; dx < k; dx++ {
						s += float64(p[c*n+(y*k+dy)*w+x*k+dx])
					}
				}
				v := s / (k * k)
				t.pix[3*(y*tw+x)+c] = uint8(math.Round(255 * srgb.FromLinear(min(max(v, 0), 1))))
			}
		}
	}
	return t
}

// writeSheet writes rows of thumbnails (one row per subject: source, then
// each prompt) with a 2 px gap.
func writeSheet(path string, rows [][]*thumb) error {
	const gap = 2
	W, H := 0, 0
	for _, r := range rows {
		rw, rh := 0, 0
		for _, t := range r {
			rw += t.w + gap
			rh = max(rh, t.h)
		}
		W = max(W, rw)
		H += rh + gap
	}
	img := image.NewRGBA(image.Rect(0, 0, W, H))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	y := 0
	for _, r := range rows {
		x, rh := 0, 0
		for _, t := range r {
			for ty := 0; ty < t.h; ty++ {
				for tx := 0; tx < t.w; tx++ {
					p := t.pix[3*(ty*t.w+tx):]
					img.SetRGBA(x+tx, y+ty, color.RGBA{p[0], p[1], p[2], 255})
				}
			}
			x += t.w + gap
			rh = max(rh, t.h)
		}
		y += rh + gap
	}
	return bench.SavePNG(path, img)
}

// PerSubject formats every prompt's measure per subject (NaN where it is
// undefined, e.g. no ground visible under a subject cut by the frame).
func (r *Report) PerSubject() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-40s", "per subject")
	for _, s := range r.Subjects {
		fmt.Fprintf(&b, " %9.9s", s)
	}
	b.WriteByte('\n')
	line := func(name string, v []float64) {
		fmt.Fprintf(&b, "%-40.40s", name)
		for _, x := range v {
			fmt.Fprintf(&b, " %9.3f", x)
		}
		b.WriteByte('\n')
	}
	for _, row := range r.Rows {
		name := row.Prompt.Prompt
		if row.Prompt.Reference {
			name = "reference " + row.Prompt.refClip()
		}
		line(name, row.Values)
		if row.Prompt.Measure == MeasureShadow {
			line("  cast: away - toward", row.Values2)
		}
		if row.Prompt.Measure == MeasureRim {
			line("  rim's side / other side", row.Values2)
		}
	}
	var e0, e1, g, sf []float64
	for _, v := range r.FGValues {
		e0, e1 = append(e0, v[0]), append(e1, v[1])
	}
	for _, v := range r.FlickerValues {
		g, sf = append(g, v[0]), append(sf, v[1])
	}
	line("fg error, source", e0)
	line("fg error, estimated", e1)
	if len(g) > 0 {
		line("gain change per frame", g)
		line("source change per frame", sf)
	}
	r.platePerSubject(line)
	r.edgePerSubject(line)
	for _, p := range r.Place {
		name := fmt.Sprintf("place %g,%g,%g: ", p.P.Scale, p.P.X, p.P.Y)
		line(name+"box error px", p.Box)
		line(name+"contact", p.Contact)
		line(name+"old spot", p.Old)
	}
	for _, row := range r.Rows {
		name := row.Prompt.Prompt
		if row.Prompt.Reference {
			name = "reference " + row.Prompt.refClip()
		}
		line("hue shift (deg): "+name, row.Hue)
	}
	for _, row := range r.Rows {
		if row.Prompt.Night {
			line("night read: "+row.Prompt.Prompt, row.Read)
		}
		if row.Prompt.KeyLeft {
			line("night key L/R: "+row.Prompt.Prompt, row.Dir)
		}
	}
	return b.String()
}

// String formats the report as a table.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "look bench: %d subjects (%s), medians over subjects\n", len(r.Subjects), strings.Join(r.Subjects, " "))
	fmt.Fprintf(&b, "%-40s %-34s %8s\n", "prompt", "measure", "median")
	names := map[Measure]string{
		MeasureLeft: "left half / right half (gain)", MeasureRight: "right half / left half (gain)",
		MeasureAbove: "top half / bottom half (gain)", MeasureRim: "edge band 4px / interior (gain)",
		MeasureNight: "subject / background luminance", MeasureReference: "subject / reference luminance",
		MeasureShadow: "darkening under the lowest points",
	}
	for _, row := range r.Rows {
		p := fmt.Sprintf("%q", row.Prompt.Prompt)
		if row.Prompt.Reference {
			p = "reference: first frame of " + row.Prompt.refClip()
		}
		fmt.Fprintf(&b, "%-40s %-34s %8.3f\n", p, names[row.Prompt.Measure], row.Median)
		if row.Prompt.Measure == MeasureShadow {
			fmt.Fprintf(&b, "%-40s %-34s %8.3f\n", "", "cast: darkening away - toward key", row.Median2)
		}
		if row.Prompt.Measure == MeasureRim {
			fmt.Fprintf(&b, "%-40s %-34s %8.3f %s\n", "", fmt.Sprintf("band, rim's side / other >= %.1f", RimSideLimit), row.Median2, metStr(row.Median2 >= RimSideLimit))
		}
	}
	fmt.Fprintf(&b, "%-40s %-34s %8.4f\n", "foreground, soft band", "colour error, source colour", r.FGErrSource)
	fmt.Fprintf(&b, "%-40s %-34s %8.4f\n", "", "colour error, estimated", r.FGErrEstimate)
	if r.FGErrSource > 0 {
		fmt.Fprintf(&b, "%-40s %-34s %8.1f%%\n", "", "reduction", 100*(1-r.FGErrEstimate/r.FGErrSource))
	}
	fmt.Fprintf(&b, "%-40s %-34s %8.4f\n", "video, first frames", "gain change per frame", r.GainFlicker)
	fmt.Fprintf(&b, "%-40s %-34s %8.4f\n", "", "source luminance change per frame", r.SourceFlicker)
	b.WriteString(r.plateString())
	b.WriteString(r.colourString())
	b.WriteString(r.nightString())
	b.WriteString(r.edgeString())
	b.WriteString(r.placeString())
	b.WriteString(r.cameraString())
	return b.String()
}
