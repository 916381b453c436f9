package matte

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/vfxrender/vfx/kernels"
)

// AutoKind is the method auto chose for a clip.
type AutoKind int

// The auto methods, tried in this order.
const (
	// AutoChroma keys a green or blue screen (with despill) per frame at
	// the output size.
	AutoChroma AutoKind = iota
	// AutoStatic differences each frame against a clean plate (the
	// temporal median) of a static camera.
	AutoStatic
	// AutoCentre segments the middle frame with a graph cut (colour
	// models, a centre ellipse and a motion cue) and propagates it with
	// select.
	AutoCentre
)

func (k AutoKind) String() string {
	return [...]string{"chroma", "static", "centre"}[k]
}

// AutoOptions tune auto.
type AutoOptions struct {
	Select SelectOptions
	// PlateSamples is the number of frames (evenly spaced) the clean
	// plate's median is taken over.
	PlateSamples int
	// StaticFraction is the share of pixels that must match the plate in
	// the median sampled frame for the camera to count as static.
	StaticFraction float64
	// PlateThreshold is the colour distance (sRGB units) above which a
	// pixel differs from the plate.
	PlateThreshold float32
	// Centre tunes the centre-prior segmentation of the keyframe.
	Centre CentreOptions
}

// DefaultAutoOptions are the tuned defaults.
func DefaultAutoOptions() AutoOptions {
	return AutoOptions{Select: DefaultSelectOptions(), PlateSamples: 25, StaticFraction: 0.6, PlateThreshold: 0.09, Centre: DefaultCentreOptions()}
}

// AutoPlan is what auto found in a clip and what it needs to make the
// mattes.
type AutoPlan struct {
	Kind AutoKind
	// Chroma keys the output frames (linear RGB) when Kind is AutoChroma.
	Chroma kernels.ChromaParams

	dev   kernels.Device
	o     AutoOptions
	w, h  int
	plate kernels.Image // AutoStatic: clean plate at the flow size
}

// Close frees the plan's images.
func (a *AutoPlan) Close() {
	if a.plate != nil {
		a.dev.Free(a.plate)
		a.plate = nil
	}
}

func srgbToLinear(v float64) float64 {
	if v <= 0.04045 {
		return v / 12.92
	}
	return math.Pow((v+0.055)/1.055, 2.4)
}

// PlanAuto looks at the clip (at the flow size, w x h) and picks the
// method: a chroma screen on the borders of frame 0, else a static camera
// (most pixels of most frames match the temporal median), else the centre
// prior.
func PlanAuto(ctx context.Context, dev kernels.Device, src Frames, w, h int, o AutoOptions) (*AutoPlan, error) {
	n := src.Len()
	if n < 1 {
		return nil, fmt.Errorf("matte: auto: no frames")
	}
	a := &AutoPlan{dev: dev, o: o, w: w, h: h, Kind: AutoCentre}
	img, err := dev.NewImage(w, h, 3)
	if err != nil {
		return nil, err
	}
	defer dev.Free(img)
	if err := src.Frame(ctx, 0, img); err != nil {
		return nil, err
	}
	pix, err := dev.ReadPixels(img)
	if err != nil {
		return nil, err
	}
	if p, ok := detectScreen(pix, w, h); ok {
		a.Kind, a.Chroma = AutoChroma, p
		return a, nil
	}
	if n < 3 {
		return a, nil
	}
	// Clean plate: per-pixel median of evenly spaced frames.
	k := min(n, max(o.PlateSamples, 3))
	samples := make([][]float32, k)
	for s := range samples {
		i := s * (n - 1) / (k - 1)
		if err := src.Frame(ctx, i, img); err != nil {
			return nil, err
		}
		if samples[s], err = dev.ReadPixels(img); err != nil {
			return nil, err
		}
	}
	plate := make([]float32, 3*w*h)
	col := make([]float32, k)
	for p := range plate {
		for s := range samples {
			col[s] = samples[s][p]
		}
		slices.Sort(col)
		plate[p] = col[k/2]
	}
	fr := make([]float64, k)
	m := w * h
	thr := float64(o.PlateThreshold) / 2
	for s, smp := range samples {
		match := 0
		for p := 0; p < m; p++ {
			d := 0.0
			for c := 0; c < 3; c++ {
				d = max(d, math.Abs(float64(smp[c*m+p]-plate[c*m+p])))
			}
			if d < thr {
				match++
			}
		}
		fr[s] = float64(match) / float64(m)
	}
	slices.Sort(fr)
	if fr[k/2] < o.StaticFraction {
		return a, nil
	}
	if a.plate, err = dev.NewImage(w, h, 3); err != nil {
		return nil, err
	}
	if err := dev.WritePixels(a.plate, plate); err != nil {
		a.Close()
		return nil, err
	}
	a.Kind = AutoStatic
	return a, nil
}

// detectScreen reports a chroma screen when most of the border band of a
// frame (sRGB values, planar) is one saturated green or blue; the returned
// screen colour is linear.
func detectScreen(pix []float32, w, h int) (kernels.ChromaParams, bool) {
	m := w * h
	b := max(1, min(w, h)/20)
	var vals [3][]float32
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if x >= b && x < w-b && y >= b && y < h-b {
				continue
			}
			for c := 0; c < 3; c++ {
				vals[c] = append(vals[c], pix[c*m+y*w+x])
			}
		}
	}
	var med [3]float64
	for c := range vals {
		s := slices.Clone(vals[c])
		slices.Sort(s)
		med[c] = float64(s[len(s)/2])
	}
	for _, ch := range []int{1, 2} {
		o1, o2 := 0, 3-ch
		k := med[ch] - max(med[o1], med[o2])
		if k < 0.2 {
			continue
		}
		match := 0
		for i := range vals[0] {
			kv := float64(vals[ch][i]) - max(float64(vals[o1][i]), float64(vals[o2][i]))
			if kv > 0.5*k {
				match++
			}
		}
		if float64(match) < 0.7*float64(len(vals[0])) {
			continue
		}
		var lin [3]float32
		for c := range lin {
			lin[c] = float32(srgbToLinear(med[c]))
		}
		return kernels.ChromaParams{Screen: lin, Channel: ch, Low: 0.15, High: 0.5}, true
	}
	return kernels.ChromaParams{}, false
}

// Mattes makes the flow-size mattes of every frame for AutoStatic and
// AutoCentre (for AutoChroma there is nothing to do at the flow size: the
// key runs on the output frames). emit is called as for Propagate.
func (a *AutoPlan) Mattes(ctx context.Context, src Frames, emit func(i int, m kernels.Image) error) error {
	switch a.Kind {
	case AutoChroma:
		return nil
	case AutoStatic:
		return a.static(ctx, src, emit)
	}
	key, err := a.dev.NewImage(a.w, a.h, 1)
	if err != nil {
		return err
	}
	defer a.dev.Free(key)
	index, err := a.CentreKeyframe(ctx, src, key)
	if err != nil {
		return err
	}
	return Propagate(ctx, a.dev, src, index, key, a.o.Select, emit)
}

func (a *AutoPlan) static(ctx context.Context, src Frames, emit func(i int, m kernels.Image) error) error {
	p, err := newPropagator(a.dev, a.w, a.h, a.o.Select)
	if err != nil {
		return err
	}
	defer p.close()
	var imgs [3]kernels.Image
	for k, c := range []int{3, 1, 1} {
		if imgs[k], err = a.dev.NewImage(a.w, a.h, c); err != nil {
			return err
		}
		defer a.dev.Free(imgs[k])
	}
	frame, rough, m := imgs[0], imgs[1], imgs[2]
	plateOnly := kernels.FuseParams{Plate: 1, PlateThreshold: a.o.PlateThreshold, PlateSoftness: a.o.PlateThreshold / 4, Bins: 16}
	withShape := plateOnly
	withShape.Prior, withShape.Local, withShape.LocalSigma = 0.5, 0.5, a.o.Select.Fuse.LocalSigma
	for i := 0; i < src.Len(); i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := src.Frame(ctx, i, frame); err != nil {
			return err
		}
		if err := p.ops.MatteFuse(rough, frame, nil, nil, nil, nil, nil, a.plate, nil, plateOnly); err != nil {
			return err
		}
		// A second round lets the local colour models fill pixels of the
		// subject that happen to match the plate.
		if err := p.fusePlate(m, frame, rough, a.plate, withShape); err != nil {
			return err
		}
		if err := emit(i, m); err != nil {
			return err
		}
	}
	return nil
}

// CentreKeyframe segments the keyframe of AutoCentre into key (1
// channel at the flow size) and returns its index: the middle frame (the
// subject of a framed shot is most likely centred there, and propagation
// runs half as far). Mattes calls it; it is exported to time it.
func (a *AutoPlan) CentreKeyframe(ctx context.Context, src Frames, key kernels.Image) (int, error) {
	if err := checkSize("keyframe matte", key, a.w, a.h, 1); err != nil {
		return 0, err
	}
	index := src.Len() / 2
	return index, a.centreKey(ctx, src, index, key)
}
