package matte

import (
	"context"
	"errors"
	"fmt"

	"github.com/vfxrender/vfx/kernels"
)

// Frames is a clip seen at the flow size: frame i as 3 channels of
// sRGB-encoded values in [0,1] (not linear light: flow and colour models
// work on perceptual values).
type Frames interface {
	// Len is the number of frames.
	Len() int
	// Frame writes frame i into dst (3 channels at the flow size).
	Frame(ctx context.Context, i int, dst kernels.Image) error
}

// SelectOptions tune keyframe propagation.
type SelectOptions struct {
	Flow FlowOptions
	// ConfSigma is the forward–backward error (flow pixels) at which the
	// confidence falls to 1/e.
	ConfSigma float32
	// PriorBlur is the Gaussian sigma (flow pixels) that softens the
	// warped matte before it becomes the shape prior: near the contour
	// colour decides, far from it shape does.
	PriorBlur float32
	// LocalRadius is the box radius (flow pixels) of the local colour
	// classifiers along the contour.
	LocalRadius int
	// Hysteresis is the log-odds gain that sharpens the warped matte
	// towards 0 or 1 before it becomes the prior.
	Hysteresis float32
	// Fuse weighs the evidence (see kernels.FuseParams).
	Fuse kernels.FuseParams
	// Net tunes the fusion with the segmentation network's map.
	Net NetOptions
	// Band, when positive and the network runs, is the half-width (flow
	// pixels) of the soft band kept around each emitted matte's 0.5
	// contour; beyond it the matte is 0 or 1, so that a frame between two
	// network frames whose carried shapes disagree shows no
	// half-transparent body (auto's rule, AutoOptions.Band). The matte
	// carried to the next frame is not snapped. Binary replaces it.
	Band float32
	// Binary, when the network runs, makes each emitted matte 0 or 1 at
	// its 0.5 level (the level J is scored at) instead of keeping Band's
	// soft band: where the matte is unsure over a wide area (a fast body
	// between network frames, a region the memory half holds) its 0.5
	// contour winds through the area and a band around it left much of
	// the body half-transparent. The edge's partial alpha is made at the
	// output size by the Refiner, guided by the frame. The matte carried
	// to the next frame stays soft.
	Binary bool
	// GapColour, when the network runs, lets the keyframe's colour model
	// decide the pixels of a frame between two network frames where the
	// shape carried forwards and the one carried back disagree (see
	// gapFill.decide), instead of blending the two into a
	// half-transparent double contour.
	GapColour bool
}

// DefaultSelectOptions are the tuned defaults.
func DefaultSelectOptions() SelectOptions {
	return SelectOptions{
		Flow:        DefaultFlowOptions(),
		ConfSigma:   1.5,
		PriorBlur:   1.5,
		LocalRadius: 6,
		Hysteresis:  4,
		Fuse:        kernels.FuseParams{Prior: 1, Global: 0.35, Local: 1, LocalSigma: 0.08, Bins: 16},
		Net:         DefaultNetOptions(),
		Band:        2,
		Binary:      true,
		GapColour:   true,
	}
}

// ErrKeyframe is a keyframe matte or index that does not fit the clip.
var ErrKeyframe = errors.New("matte: bad keyframe")

// colourTable turns foreground and background histograms into the
// posterior P(fg | colour) per cell, with add-one smoothing.
func colourTable(fg, bg []float64) []float32 {
	var nf, nb float64
	for i := range fg {
		nf += fg[i]
		nb += bg[i]
	}
	t := make([]float32, len(fg))
	cells := float64(len(fg))
	for i := range fg {
		pf := (fg[i] + 0.5) / (nf + 0.5*cells)
		pb := (bg[i] + 0.5) / (nb + 0.5*cells)
		t[i] = float32(pf / (pf + pb))
	}
	return t
}

// propagator is the per-job state of select at the flow size.
type propagator struct {
	dev  kernels.Device
	ops  kernels.Ops
	o    SelectOptions
	w, h int
	fe   *flowEngine
	fe2  *flowEngine // the backward flow runs beside the forward one

	zero3, zero1, one1  kernels.Image
	tmp3, fg, bg, cover kernels.Image
	fwd, bwd, conf      kernels.Image
	warped, prior       kernels.Image
	sharp               kernels.Image
	raw, eNew, eOld     kernels.Image
	table               []float32
	refMean             float64 // mean luma of the keyframe
	shapeOnly           bool    // step warps without the colour models (with a network)
}

func newPropagator(dev kernels.Device, w, h int, o SelectOptions) (*propagator, error) {
	p := &propagator{dev: dev, ops: dev.Ops(), o: o, w: w, h: h}
	var err error
	if p.fe, err = newFlowEngine(dev, w, h, o.Flow); err != nil {
		return nil, err
	}
	if p.fe2, err = newFlowEngine(dev, w, h, o.Flow); err != nil {
		p.fe.close()
		return nil, err
	}
	for _, t := range []struct {
		dst *kernels.Image
		c   int
	}{{&p.zero3, 3}, {&p.zero1, 1}, {&p.one1, 1}, {&p.tmp3, 3}, {&p.fg, 3}, {&p.bg, 3}, {&p.cover, 1},
		{&p.fwd, 2}, {&p.bwd, 2}, {&p.conf, 1}, {&p.warped, 1}, {&p.prior, 1}, {&p.sharp, 1},
		{&p.raw, 3}, {&p.eNew, 1}, {&p.eOld, 1}} {
		if *t.dst, err = dev.NewImage(w, h, t.c); err != nil {
			p.close()
			return nil, err
		}
	}
	if err := p.ops.Fill(p.one1, []float32{1}); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

func (p *propagator) close() {
	if p.fe != nil {
		p.fe.close()
	}
	if p.fe2 != nil {
		p.fe2.close()
	}
	for _, im := range []kernels.Image{p.zero3, p.zero1, p.one1, p.tmp3, p.fg, p.bg, p.cover, p.fwd, p.bwd, p.conf, p.warped, p.prior, p.sharp, p.raw, p.eNew, p.eOld} {
		if im != nil {
			p.dev.Free(im)
		}
	}
}

// learnColours builds the global colour table from a frame and its matte.
func (p *propagator) learnColours(frame, m kernels.Image) error {
	bins := p.o.Fuse.Bins
	hf, err := p.ops.ColourHistogram(frame, m, bins)
	if err != nil {
		return err
	}
	inv := p.cover
	if err := p.ops.Composite(inv, p.zero1, p.one1, m); err != nil { // 1 - m
		return err
	}
	hb, err := p.ops.ColourHistogram(frame, inv, bins)
	if err != nil {
		return err
	}
	p.table = colourTable(hf, hb)
	return nil
}

// step propagates matte prevM of the previous frame (pyramid prevP) to
// the current frame (frame, pyramid curP) into dst.
func (p *propagator) step(dst, frame, prevM kernels.Image, curP, prevP *pyramid, f kernels.FuseParams) error {
	ops := p.ops
	// The two flows run concurrently (on distinct images, which every
	// Device allows): the coarse pyramid levels are too small to fill the
	// cores on their own.
	done := make(chan error, 1)
	go func() { done <- p.fe2.flow(p.bwd, prevP, curP) }() // previous -> current
	errF := p.fe.flow(p.fwd, curP, prevP)                  // current -> previous
	if err := errors.Join(errF, <-done); err != nil {
		return err
	}
	if err := ops.FlowConfidence(p.conf, p.fwd, p.bwd, p.o.ConfSigma); err != nil {
		return err
	}
	if err := ops.Warp(p.warped, prevM, p.fwd, 1); err != nil {
		return err
	}
	// Hysteresis: the warped matte is pushed towards 0 or 1 before it
	// becomes the prior, so that weak colour evidence cannot accumulate
	// over frames (recursive log-odds would otherwise let any small bias
	// grow a region from nothing).
	if err := ops.MatteFuse(p.sharp, frame, p.warped, nil, nil, nil, nil, nil, nil, kernels.FuseParams{Prior: p.o.Hysteresis}); err != nil {
		return err
	}
	if p.shapeOnly {
		// With the network, motion carries the shape and the network
		// corrects it: the colour models are left out. Measured on real
		// footage (vfx bench matte, 4 clips), they let the matte grow into
		// look-alike background: select J 0.51 with the local contour
		// classifiers alone, 0.27 on one clip with all of them, 0.70 on
		// that clip and 0.64 on the 4 without either.
		return p.ops.Copy(dst, p.sharp)
	}
	return p.fuse(dst, frame, p.sharp, p.conf, f)
}

// dropStill applies auto's motion cue to the first matte key (frame
// index, pyramid keyP, network map net): the flow from it to the next
// frame (or the previous, on the last) shows which of the network's
// regions are still while another moves on its own, and those are cleared.
func (p *propagator) dropStill(ctx context.Context, src Frames, index int, keyP *pyramid, nf *netFuser, net []float32, key kernels.Image) error {
	j := index + 1
	if j >= src.Len() {
		j = index - 1
	}
	pyr, err := p.lumaPyramid(ctx, src, j, p.tmp3)
	if err != nil {
		return err
	}
	defer pyr.free(p.dev)
	if err := p.fe.flow(p.bwd, keyP, pyr); err != nil { // key -> frame j
		return err
	}
	flow, err := p.dev.ReadPixels(p.bwd)
	if err != nil {
		return err
	}
	kp, err := p.dev.ReadPixels(key)
	if err != nil {
		return err
	}
	sel, _, _ := nf.selection(net, kp)
	if nf.stillRegions(sel, flow) == 0 {
		return nil
	}
	for i, l := range nf.lab {
		if l != 0 && sel[l] == regionOther {
			kp[i] = 0
		}
	}
	return p.dev.WritePixels(key, kp)
}

// fuse combines a (warped) shape matte with the colour models into dst.
func (p *propagator) fuse(dst, frame, shape, conf kernels.Image, f kernels.FuseParams) error {
	return p.fuseWith(dst, frame, shape, shape, conf, nil, f)
}

// fuseWith fuses the blurred prior shape, the local colour classifiers
// around the contour of local, the global colour table and an optional
// plate into dst (which may be local or prior: both are consumed before
// dst is written).
func (p *propagator) fuseWith(dst, frame, prior, local, conf, plate kernels.Image, f kernels.FuseParams) error {
	ops := p.ops
	if err := ops.GaussianBlur(p.prior, prior, p.o.PriorBlur); err != nil {
		return err
	}
	r := p.o.LocalRadius
	if err := ops.Composite(p.tmp3, frame, p.zero3, local); err != nil { // I*m
		return err
	}
	if err := ops.BoxFilter(p.fg, p.tmp3, r); err != nil {
		return err
	}
	if err := ops.Composite(p.tmp3, p.zero3, frame, local); err != nil { // I*(1-m)
		return err
	}
	if err := ops.BoxFilter(p.bg, p.tmp3, r); err != nil {
		return err
	}
	if err := ops.BoxFilter(p.cover, local, r); err != nil {
		return err
	}
	return ops.MatteFuse(dst, frame, p.prior, conf, p.fg, p.bg, p.cover, plate, p.table, f)
}

// lumaPyramid reads frame i into frame, its brightness normalised to the
// keyframe's (the first frame read), and builds its luma pyramid. The
// normalisation keeps flow and the colour models valid through exposure
// and lighting changes.
func (p *propagator) lumaPyramid(ctx context.Context, src Frames, i int, frame kernels.Image) (*pyramid, error) {
	if err := src.Frame(ctx, i, p.raw); err != nil {
		return nil, err
	}
	lum, err := p.dev.NewImage(p.w, p.h, 1)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*pyramid, error) {
		p.dev.Free(lum)
		return nil, err
	}
	if err := p.ops.Luma(lum, p.raw); err != nil {
		return fail(err)
	}
	sum, err := p.ops.Sum(lum)
	if err != nil {
		return fail(err)
	}
	mean := max(sum[0]/float64(p.w*p.h), 1e-3)
	if p.refMean == 0 {
		p.refMean = mean
	}
	if err := p.ops.Fill(p.eNew, []float32{float32(p.refMean)}); err != nil {
		return fail(err)
	}
	if err := p.ops.Fill(p.eOld, []float32{float32(mean)}); err != nil {
		return fail(err)
	}
	if err := p.ops.RatioRelight(frame, p.raw, p.eNew, p.eOld, nil, 1e-4, 4); err != nil {
		return fail(err)
	}
	if err := p.ops.Luma(lum, frame); err != nil {
		return fail(err)
	}
	return p.fe.pyramid(lum)
}

// Propagate carries the keyframe matte key (1 channel at the flow size,
// the matte of frame index) through every frame of src: forward from the
// keyframe to the last frame, then backward to frame 0. emit receives each
// frame's matte at the flow size, in that order (the keyframe first, as
// given); the image is reused after emit returns.
//
// With a network (net not nil), every frame the network ran on is fused
// with its map (see netFuser.fuse): the keyframe decides which of the
// network's regions are the object, motion carries that identity, and the
// network corrects the propagated shape. net nil propagates by motion and
// colour alone.
func Propagate(ctx context.Context, dev kernels.Device, src Frames, net Objectness, index int, key kernels.Image, o SelectOptions, emit func(i int, m kernels.Image) error) error {
	if net == nil || (o.Band <= 0 && !o.Binary) {
		return propagate(ctx, dev, src, net, false, index, key, o, emit)
	}
	w, h := key.Width(), key.Height()
	out, err := dev.NewImage(w, h, 1)
	if err != nil {
		return err
	}
	defer dev.Free(out)
	band := newSnapper(w, h, o.Net, o.Band, o.Binary)
	snapped := func(i int, m kernels.Image) error {
		if i == index {
			return emit(i, m) // the keyframe matte as given
		}
		v, err := dev.ReadPixels(m)
		if err != nil {
			return err
		}
		band.apply(v)
		if err := dev.WritePixels(out, v); err != nil {
			return err
		}
		return emit(i, out)
	}
	return propagate(ctx, dev, src, net, false, index, key, o, snapped)
}

func propagate(ctx context.Context, dev kernels.Device, src Frames, net Objectness, all bool, index int, key kernels.Image, o SelectOptions, emit func(i int, m kernels.Image) error) error {
	n := src.Len()
	if index < 0 || index >= n {
		return fmt.Errorf("%w: index %d outside 0..%d", ErrKeyframe, index, n-1)
	}
	w, h := key.Width(), key.Height()
	if key.Channels() != 1 {
		return fmt.Errorf("%w: keyframe matte has %d channels", ErrKeyframe, key.Channels())
	}
	p, err := newPropagator(dev, w, h, o)
	if err != nil {
		return err
	}
	defer p.close()
	var imgs [4]kernels.Image // frames and mattes, current and previous
	for k, c := range []int{3, 3, 1, 1} {
		if imgs[k], err = dev.NewImage(w, h, c); err != nil {
			return err
		}
		defer dev.Free(imgs[k])
	}
	keyFrame := imgs[0]
	keyP, err := p.lumaPyramid(ctx, src, index, keyFrame)
	if err != nil {
		return err
	}
	defer keyP.free(dev)
	if err := p.learnColours(keyFrame, key); err != nil {
		return err
	}
	var nf *netFuser
	var nbuf, out, cropBuf []float32
	inverted := false
	invKey, err := dev.NewImage(w, h, 1)
	if err != nil {
		return err
	}
	defer dev.Free(invKey)
	outM, err := dev.NewImage(w, h, 1)
	if err != nil {
		return err
	}
	defer dev.Free(outM)
	// emitted hands emit the matte of the object the keyframe picked.
	emitted := func(i int, m kernels.Image) error {
		if !inverted {
			return emit(i, m)
		}
		if err := p.ops.Composite(outM, p.zero1, p.one1, m); err != nil { // 1 - m
			return err
		}
		return emit(i, outM)
	}
	if net != nil {
		nf = newNetFuser(w, h, o.Net)
		nf.all = all
		nbuf, out = make([]float32, w*h), make([]float32, w*h)
		ok, err := net.Objectness(ctx, index, nbuf)
		if err != nil {
			return err
		}
		kp, err := dev.ReadPixels(key)
		if err != nil {
			return err
		}
		if ok && !all {
			// A small keyframe matte: the trust is measured on the
			// crop's map, as the later small frames are fused with it.
			if _, err := cropInto(ctx, net, o.Net, index, kp, nbuf, w, h, &cropBuf); err != nil {
				return err
			}
		}
		nf.trust, nf.tPos = 0, 0
		if ok {
			nf.setTrust(nbuf, kp)
			// A keyframe that picks everything but an object the network
			// sees (the scene around a subject) is followed as that
			// object's complement: its shape is what the network explains.
			if !all && nf.trust < 1 {
				inv := make([]float32, len(kp))
				for i, v := range kp {
					inv[i] = 1 - v
				}
				trust, tPos, area, seen := nf.trust, nf.tPos, nf.keyArea, nf.seen
				nf.setTrust(nbuf, inv)
				if nf.trust > trust {
					if err := dev.WritePixels(invKey, inv); err != nil {
						return err
					}
					key, inverted = invKey, true
					// The colour model was learned for the keyframe's
					// selection; the matte carried is its complement.
					for k, v := range p.table {
						p.table[k] = 1 - v
					}
				} else {
					nf.trust, nf.tPos, nf.keyArea, nf.seen = trust, tPos, area, seen
				}
			}
			// auto: the motion cue on the first matte too, from the flow
			// to the next frame (see stillRegions).
			if all && n > 1 {
				if err := p.dropStill(ctx, src, index, keyP, nf, nbuf, key); err != nil {
					return err
				}
			}
		}
		if ok && !all {
			km, err := dev.ReadPixels(key)
			if err != nil {
				return err
			}
			if err := nf.initMemory(ctx, net, index, km); err != nil {
				return err
			}
		}
		// With the network, motion carries the shape and the network
		// corrects it; the colour models, which let a matte grow into
		// look-alike background (J 0.27 against 0.70 on a dancer whose
		// floor matches his clothes), are left out.
		p.shapeOnly = true
	}
	// withNet fuses frame i's network map, when there is one, into m and
	// reports whether the network ran on frame i.
	withNet := func(i int, frame, m kernels.Image) (bool, error) {
		if nf == nil {
			return false, nil
		}
		ok, err := net.Objectness(ctx, i, nbuf)
		if err != nil || !ok {
			return false, err
		}
		if nf.wantsColour() {
			px, err := dev.ReadPixels(frame)
			if err != nil {
				return false, err
			}
			if len(nf.colour) != w*h {
				nf.colour = make([]float32, w*h)
			}
			colourEvidence(nf.colour, px, p.table, p.o.Fuse.Bins)
		}
		prop, err := dev.ReadPixels(m)
		if err != nil {
			return false, err
		}
		shape, err := dev.ReadPixels(p.warped)
		if err != nil {
			return false, err
		}
		if _, err := cropInto(ctx, net, o.Net, i, shape, nbuf, w, h, &cropBuf); err != nil {
			return false, err
		}
		nf.frame = i
		if err := nf.memInto(ctx, net, i, nbuf, prop); err != nil {
			return false, err
		}
		var flow []float32
		if nf.all {
			// auto: the motion cue (see stillRegions) needs this step's flow.
			if flow, err = dev.ReadPixels(p.fwd); err != nil {
				return false, err
			}
		}
		nf.fuse(out, prop, shape, nbuf, flow)
		nf.memRemember(out)
		return true, dev.WritePixels(m, out)
	}
	if err := emitted(index, key); err != nil {
		return err
	}
	// Between two frames the network ran on, a matte carried forwards
	// from the first drifts the further it gets; each such frame is held
	// until the second is fused and then blended with that matte carried
	// back (along the flows the forward steps already measured), so that
	// no frame is more than half a gap from a network frame.
	gap := &gapFill{p: p, all: all}
	defer gap.free()
	for _, dir := range []int{1, -1} {
		if nf != nil {
			nf.sweepArea = 0 // each sweep starts from the keyframe's shape
			if nf.mem != nil {
				nf.mem.forget()
			}
		}
		prevM := key
		prevP := keyP
		cur, curM, spareM := imgs[1], imgs[2], imgs[3]
		for i := index + dir; i >= 0 && i < n; i += dir {
			if err := ctx.Err(); err != nil {
				return err
			}
			curP, err := p.lumaPyramid(ctx, src, i, cur)
			if err != nil {
				return err
			}
			if err := p.step(curM, cur, prevM, curP, prevP, o.Fuse); err != nil {
				curP.free(dev)
				return err
			}
			if prevP != keyP {
				prevP.free(dev)
			}
			prevP = curP
			ran, err := withNet(i, cur, curM)
			if err == nil {
				err = gap.add(i, cur, curM, ran, nf != nil, emitted)
			}
			if err != nil {
				prevP.free(dev)
				return err
			}
			prevM, curM, spareM = curM, spareM, curM
			_ = spareM
		}
		if prevP != keyP {
			prevP.free(dev)
		}
		if err := gap.flush(emitted); err != nil {
			return err
		}
	}
	return nil
}

// gapFill holds the frames between two network frames of one sweep (see
// propagate): each held frame's forward matte and the flow from it to the
// next frame of the sweep.
type gapFill struct {
	p    *propagator
	all  bool      // auto (for traces)
	phi  []float32 // the features of one frame (fitted model or trace)
	held []heldFrame
	pool []kernels.Image // spare 1-, 2- and 3-channel images, reused
	// fwd and colour are scratch for decide (SelectOptions.GapColour).
	fwd, colour []float32
	back        kernels.Image
}

type heldFrame struct {
	i    int
	m    kernels.Image // the matte carried forwards (1 channel)
	flow kernels.Image // this frame's pixels to the next frame (2 channels); nil until that step
	// cf is the confidence of the last forward step into this frame, cb
	// of the backward step into it from the next frame (1 channel each).
	cf, cb kernels.Image
	// frame is the frame itself (3 channels; SelectOptions.GapColour).
	frame kernels.Image
}

func (g *gapFill) get(c int) (kernels.Image, error) {
	for k, im := range g.pool {
		if im.Channels() == c {
			g.pool = append(g.pool[:k], g.pool[k+1:]...)
			return im, nil
		}
	}
	return g.p.dev.NewImage(g.p.w, g.p.h, c)
}

func (g *gapFill) put(ims ...kernels.Image) {
	for _, im := range ims {
		if im != nil {
			g.pool = append(g.pool, im)
		}
	}
}

func (g *gapFill) free() {
	g.put(g.back)
	g.back = nil
	for _, h := range g.held {
		g.put(h.m, h.flow, h.cf, h.cb, h.frame)
	}
	g.held = nil
	for _, im := range g.pool {
		g.p.dev.Free(im)
	}
	g.pool = nil
}

// add takes frame i (frame) and its matte m right after its step (p.bwd
// is the flow from the previous frame of the sweep to frame i). Without a
// network every frame is emitted at once; a frame the network ran on
// closes the gap.
func (g *gapFill) add(i int, frame, m kernels.Image, ran, withNet bool, emit func(int, kernels.Image) error) error {
	if !withNet {
		return emit(i, m)
	}
	ops := g.p.ops
	if k := len(g.held); k > 0 {
		f, err := g.get(2)
		if err != nil {
			return err
		}
		cb, err := g.get(1)
		if err != nil {
			return err
		}
		g.held[k-1].flow, g.held[k-1].cb = f, cb
		if err := ops.Copy(f, g.p.bwd); err != nil {
			return err
		}
		if err := ops.FlowConfidence(cb, g.p.bwd, g.p.fwd, g.p.o.ConfSigma); err != nil {
			return err
		}
	}
	if !ran {
		c, err := g.get(1)
		if err != nil {
			return err
		}
		cf, err := g.get(1)
		if err != nil {
			return err
		}
		h := heldFrame{i: i, m: c, cf: cf}
		if g.p.o.GapColour {
			if h.frame, err = g.get(3); err != nil {
				return err
			}
			if err := ops.Copy(h.frame, frame); err != nil {
				return err
			}
		}
		g.held = append(g.held, h)
		if err := ops.Copy(cf, g.p.conf); err != nil {
			return err
		}
		return ops.Copy(c, m)
	}
	if err := g.close(m, emit); err != nil {
		return err
	}
	return emit(i, m)
}

// close carries the fused matte m of the frame that ends the gap back
// through the held frames, blends each with its forward matte by its
// distance to the two ends, and emits them.
func (g *gapFill) close(m kernels.Image, emit func(int, kernels.Image) error) error {
	k := len(g.held)
	if k == 0 {
		return nil
	}
	p, ops := g.p, g.p.ops
	if g.back == nil {
		var err error
		if g.back, err = g.get(1); err != nil {
			return err
		}
	}
	back := make([][]float32, k)
	from := m
	for j := k - 1; j >= 0; j-- {
		if err := ops.Warp(p.warped, from, g.held[j].flow, 1); err != nil {
			return err
		}
		if err := ops.MatteFuse(g.back, p.raw, p.warped, nil, nil, nil, nil, nil, nil, kernels.FuseParams{Prior: p.o.Hysteresis}); err != nil {
			return err
		}
		var err error
		if back[j], err = p.dev.ReadPixels(g.back); err != nil {
			return err
		}
		from = g.back
	}
	for j, h := range g.held {
		fw, err := p.dev.ReadPixels(h.m)
		if err != nil {
			return err
		}
		cf, err := p.dev.ReadPixels(h.cf)
		if err != nil {
			return err
		}
		cb, err := p.dev.ReadPixels(h.cb)
		if err != nil {
			return err
		}
		fwd := fw
		if h.frame != nil {
			fwd = append(g.fwd[:0], fw...)
			g.fwd = fwd
		}
		g.blend(h.i, fw, back[j], cf, cb, float32(j+1)/float32(k+1))
		if h.frame != nil {
			px, err := p.dev.ReadPixels(h.frame)
			if err != nil {
				return err
			}
			g.decide(fw, fwd, back[j], px)
		}
		if err := p.dev.WritePixels(h.m, fw); err != nil {
			return err
		}
		if err := emit(h.i, h.m); err != nil {
			return err
		}
	}
	for _, h := range g.held {
		g.put(h.m, h.flow, h.cf, h.cb, h.frame)
	}
	g.held = g.held[:0]
	return nil
}

// blend makes held frame i's matte in fw from its forward matte fw and
// the matte carried back to it (bw), t being the frame's share of the way
// to the later network frame and cf, cb the flow confidences of the steps
// next to it on each side. Without a fitted gap model: weighted by
// distance to the two ends and, per pixel, by how well the flow holds on
// each side (a fast limb that the two disagree on shows both,
// half-transparent). With one (NetOptions.Model.Gap), its logistic model
// over the features gBias … decides per pixel.
func (g *gapFill) blend(i int, fw, bw, cf, cb []float32, t float32) {
	var model []float64
	if m := g.p.o.Net.Model; m != nil {
		model = m.Gap
	}
	tr := g.p.o.Net.GapTrace
	if len(model) == 0 && tr == nil {
		g.handBlend(fw, bw, cf, cb, t)
		return
	}
	n := len(fw)
	if len(g.phi) != n*NumGapFeatures {
		g.phi = make([]float32, n*NumGapFeatures)
	}
	for x := 0; x < n; x++ {
		phi := g.phi[x*NumGapFeatures : (x+1)*NumGapFeatures]
		a, b := clampLogit(fw[x]), clampLogit(bw[x])
		phi[gBias], phi[gFwd], phi[gBwd] = 1, a, b
		phi[gFwdT], phi[gBwdT] = (1-t)*a, t*b
		phi[gFwdC], phi[gBwdC], phi[gConf] = cf[x]*a, cb[x]*b, cf[x]-cb[x]
	}
	if tr != nil {
		tr(GapTrace{Frame: i, W: g.p.w, H: g.p.h, Features: g.phi, Auto: g.all})
	}
	if len(model) == 0 {
		g.handBlend(fw, bw, cf, cb, t)
		return
	}
	for x := 0; x < n; x++ {
		fw[x] = sigmoid(dot(model, g.phi[x*NumGapFeatures:(x+1)*NumGapFeatures]))
	}
}

// decide lets the keyframe's colour model settle the pixels of a held
// frame (planar RGB px) where the matte carried forwards (fwd) and the one
// carried back (bwd) disagree: the blend m is the prior and the colour
// model's log-odds the evidence, counted in proportion to the
// disagreement |fwd - bwd| (where the two shapes agree, the colours are
// not asked: they would let the matte grow into look-alike background).
// A fast limb that one shape holds and the other has left is kept where
// its colours are the object's and dropped where they are the
// background's, instead of showing both positions half-transparent.
func (g *gapFill) decide(m, fwd, bwd, px []float32) {
	n := len(m)
	if len(g.colour) != n {
		g.colour = make([]float32, n)
	}
	colourEvidence(g.colour, px, g.p.table, g.p.o.Fuse.Bins)
	for x, v := range m {
		d := fwd[x] - bwd[x]
		if d < 0 {
			d = -d
		}
		if d == 0 || v <= 0 || v >= 1 {
			continue
		}
		m[x] = sigmoid(logit(v) + d*g.colour[x])
	}
}

// handBlend is the gap fill's hand rule (see blend).
func (g *gapFill) handBlend(fw, bw, cf, cb []float32, t float32) {
	const eps = 0.05
	for x := range fw {
		wf, wb := (1-t)*(cf[x]+eps), t*(cb[x]+eps)
		fw[x] = (wf*fw[x] + wb*bw[x]) / (wf + wb)
	}
}

// flush emits the frames still held at the end of a sweep as they were
// carried forwards.
func (g *gapFill) flush(emit func(int, kernels.Image) error) error {
	for _, h := range g.held {
		if err := emit(h.i, h.m); err != nil {
			return err
		}
		g.put(h.m, h.flow, h.cf, h.cb, h.frame)
	}
	g.held = g.held[:0]
	return nil
}
