package matte

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/vfxrender/vfx/internal/srgb"
	"github.com/vfxrender/vfx/kernels"
)

// AutoKind is the method auto chose for a clip.
type AutoKind int

// The auto methods, tried in this order.
const (
	// AutoChroma keys a green or blue screen (with despill) per frame at
	// the output size.
	AutoChroma AutoKind = iota
	// AutoNet is the segmentation network's matte (every salient object),
	// carried between the frames it runs on by motion and stabilised by
	// fusing each of its maps with the propagated matte.
	AutoNet
)

func (k AutoKind) String() string {
	return [...]string{"chroma", "net"}[k]
}

// ErrNoNetwork is auto or select asked to run without a segmentation
// network where one is needed.
var ErrNoNetwork = errors.New("matte: no segmentation network")

// AutoOptions tune auto.
type AutoOptions struct {
	Select SelectOptions
	// Band is the half-width (flow pixels) of the soft band kept around
	// the matte's contour; beyond it the matte is snapped to 0 or 1.
	// Stills keep it (at the output size); video mattes keep it only
	// without Binary.
	Band float32
	// Binary makes each emitted video matte 0 or 1 at its 0.5 level, as
	// SelectOptions.Binary does for select; unlike select's, auto's
	// matte carried on from a network frame is the emitted one (as it
	// was with the band).
	Binary bool
}

// DefaultAutoOptions are the defaults.
func DefaultAutoOptions() AutoOptions {
	return AutoOptions{Select: DefaultSelectOptions(), Band: 2, Binary: true}
}

// AutoPlan is what auto found in a clip and what it needs to make the
// mattes.
type AutoPlan struct {
	Kind AutoKind
	// Chroma keys the output frames (linear RGB) when Kind is AutoChroma.
	Chroma kernels.ChromaParams

	dev  kernels.Device
	o    AutoOptions
	w, h int
	net  Objectness
}

// Close frees the plan's resources.
func (a *AutoPlan) Close() {}

// PlanAuto looks at the clip (at the flow size, w x h) and picks the
// method: a chroma screen on the borders of frame 0, else the network
// (ErrNoNetwork when net is nil: there is no silent fallback).
func PlanAuto(ctx context.Context, dev kernels.Device, src Frames, net Objectness, w, h int, o AutoOptions) (*AutoPlan, error) {
	n := src.Len()
	if n < 1 {
		return nil, fmt.Errorf("matte: auto: no frames")
	}
	a := &AutoPlan{dev: dev, o: o, w: w, h: h, Kind: AutoNet, net: net}
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
	if net == nil {
		return nil, fmt.Errorf("%w: auto needs one for a clip without a chroma screen", ErrNoNetwork)
	}
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
			lin[c] = float32(srgb.ToLinear(med[c]))
		}
		return kernels.ChromaParams{Screen: lin, Channel: ch, Low: 0.15, High: 0.5}, true
	}
	return kernels.ChromaParams{}, false
}

// Mattes makes the flow-size mattes of every frame for AutoNet (for
// AutoChroma there is nothing to do at the flow size: the key runs on the
// output frames). emit is called as for Propagate. Frame 0's matte is the
// network's map; later frames are propagated and fused with the network
// wherever it ran. Every matte is made 0 or 1 at its 0.5 level (Binary)
// or snapped to 0 or 1 beyond the soft band.
func (a *AutoPlan) Mattes(ctx context.Context, src Frames, emit func(i int, m kernels.Image) error) error {
	if a.Kind == AutoChroma {
		return nil
	}
	first := make([]float32, a.w*a.h)
	ok, err := a.net.Objectness(ctx, 0, first)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: the network did not run on frame 0", ErrNoNetwork)
	}
	key, err := a.dev.NewImage(a.w, a.h, 1)
	if err != nil {
		return err
	}
	defer a.dev.Free(key)
	if err := a.dev.WritePixels(key, first); err != nil {
		return err
	}
	band := newSnapper(a.w, a.h, a.o.Select.Net, a.o.Band, a.o.Binary)
	snapped := func(i int, m kernels.Image) error {
		v, err := a.dev.ReadPixels(m)
		if err != nil {
			return err
		}
		band.apply(v)
		// Written back into m: on a network frame that is also the matte
		// carried to the next frame (as with the soft band before).
		if err := a.dev.WritePixels(m, v); err != nil {
			return err
		}
		return emit(i, m)
	}
	return propagate(ctx, a.dev, src, a.net, true, 0, key, a.o.Select, snapped)
}
