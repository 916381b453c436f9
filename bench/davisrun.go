package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/vfxrender/vfx/infer"
	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/matte"
)

// MatteMode is one way the real-footage benchmark runs a clip.
type MatteMode string

// The benchmark's modes.
const (
	// SelectFirst is select with the true mask of frame 0 as the keyframe.
	SelectFirst MatteMode = "select"
	// SelectMiddle is select from the middle frame's true mask.
	SelectMiddle MatteMode = "select-mid"
	// SelectInverse is select with the inverse of frame 0's mask, scored
	// against the inverse masks (everything but the subject).
	SelectInverse MatteMode = "select-inv"
	// AutoVideo is auto on the whole clip.
	AutoVideo MatteMode = "auto"
	// AutoStill is auto on the clip's first frame as an image job.
	AutoStill MatteMode = "auto-still"
	// NetAlone is the network's own map on the frames its schedule runs
	// on, without propagation or fusion (a diagnostic: what the pipeline
	// adds to the network; not in "all").
	NetAlone MatteMode = "net"
	// NetSelect is the network's own map restricted to the regions that
	// select's fusion (keyframe 0) takes as the object, on the frames the
	// network ran on: what the network gives for the picked object without
	// the carried shape (a diagnostic; select should not lose to it).
	NetSelect MatteMode = "net-select"
)

// diagnosticModes are the modes outside "all".
var diagnosticModes = []MatteMode{NetAlone, NetSelect}

// AllMatteModes are the modes in report order.
var AllMatteModes = []MatteMode{SelectFirst, SelectMiddle, SelectInverse, AutoVideo, AutoStill}

// ParseMatteModes parses a comma-separated list ("all" for every mode).
func ParseMatteModes(s string) ([]MatteMode, error) {
	if s == "" || s == "all" {
		return AllMatteModes, nil
	}
	var out []MatteMode
	for _, f := range strings.Split(s, ",") {
		ok := false
		for _, m := range append(AllMatteModes[:len(AllMatteModes):len(AllMatteModes)], diagnosticModes...) {
			if string(m) == f {
				out, ok = append(out, m), true
			}
		}
		if !ok {
			return nil, fmt.Errorf("bench: unknown matte mode %q (want %v or all)", f, AllMatteModes)
		}
	}
	return out, nil
}

// ClipResult is one clip in one mode.
type ClipResult struct {
	Clip   string
	Mode   MatteMode
	Scores MatteScores
	// CopyJ is the mean J of copying the keyframe mask to every frame
	// (select modes), the baseline no clip may fall below.
	CopyJ float64
	// SelectOnNet (net-select rows, when select ran before it in the same
	// run) is select's score on the frames the net-select row scores: the
	// network's frames, so that the two compare on the same frames.
	SelectOnNet *MatteScores
	Frames      int
	// Matte is the time of the matte work without the network's runs
	// (flow, propagation, fusion, refinement at the clip size).
	Matte time.Duration
	// NetRuns is the number of frames the network ran on in this mode;
	// CropRuns the number of its second runs on a crop around a small
	// subject (matte.NetOptions.CropArea).
	NetRuns, CropRuns int
	// Mattes are the refined mattes (kept only when asked for, for sheets).
	Mattes [][]float32
}

// RealMatteConfig configures RunRealMattes.
type RealMatteConfig struct {
	Modes    []MatteMode
	Schedule matte.Schedule
	Net      *NetCache
	// Keep keeps the refined mattes of these clips (for contact sheets).
	Keep map[string]bool
	// Progress, when set, receives a line per clip and mode.
	Progress io.Writer
	// Net, when set, replaces the default fusion options (matte.
	// DefaultNetOptions): another fitted model, or the hand rules.
	NetOptions *matte.NetOptions
	// CropArea, when positive, turns on the network's second run on a
	// crop around a subject whose carried shape is under this share of
	// the frame (matte.NetOptions.CropArea; off by default, negative
	// turns it off too). CropMargin, when positive, replaces the crop
	// box's margin.
	CropArea, CropMargin float64
	// SelectBand, when not 0, replaces select's snap band
	// (matte.SelectOptions.Band); negative turns the snap off.
	SelectBand float32
	// Soft keeps the emitted video mattes' soft band (select's and
	// auto's Binary off): the mattes as they were before session 18.
	Soft bool
	// RefineRadius and RefineEps, when positive, replace the refiner's
	// guided filter radius and regulariser (matte.Refiner.SetFilter).
	RefineRadius int
	RefineEps    float32
	// FlowLevels, FlowIterations and FlowWindow, when positive, replace
	// the flow's pyramid levels, solver steps per level and box radius
	// (matte.FlowOptions) in select's and auto's propagation.
	FlowLevels, FlowIterations, FlowWindow int
	// Fit, when set, collects the fusion's and gap fill's features with
	// the true mattes (select, select-mid and auto) for FitFusion.
	Fit *FitData
}

// flow is o with the configuration's flow settings in place.
func (cfg RealMatteConfig) flow(o matte.FlowOptions) matte.FlowOptions {
	if cfg.FlowLevels > 0 {
		o.Levels = cfg.FlowLevels
	}
	if cfg.FlowIterations > 0 {
		o.Iterations = cfg.FlowIterations
	}
	if cfg.FlowWindow > 0 {
		o.Window = cfg.FlowWindow
	}
	return o
}

// netOptions are the fusion options of a run of mode on a clip, with the
// traces that collect fitting data when asked.
func (p *prepared) netOptions(dev kernels.Device, cfg RealMatteConfig, mode MatteMode, trace func(matte.FuseTrace)) matte.NetOptions {
	o := matte.DefaultNetOptions()
	if cfg.NetOptions != nil {
		o = *cfg.NetOptions
	}
	if cfg.CropArea != 0 {
		o.CropArea = max(cfg.CropArea, 0)
	}
	if cfg.CropMargin > 0 {
		o.CropMargin = cfg.CropMargin
	}
	fit := cfg.Fit
	if fit == nil || (mode != SelectFirst && mode != SelectMiddle && mode != AutoVideo) {
		o.Trace = trace
		return o
	}
	id := fit.clipID(p.c.Name())
	if fit.Wants("gate") {
		o.GateTrace = func(t matte.GateTrace) {
			tl := p.lowTruth(dev, t.Frame)
			if tl == nil {
				return
			}
			// The label: is the network's map the better matte here (by
			// IoU with the truth at the flow size)? The weight: by how much.
			jf, jn := JaccardIndex(binary(t.Fused), binary(tl)), JaccardIndex(binary(t.NetSelect), binary(tl))
			if d := jn - jf; math.Abs(d) >= 0.002 {
				set := &fit.Gate
				if t.Auto {
					set = &fit.GateAuto
				}
				for _, k := range fit.DropGate {
					t.Features[k] = 0
				}
				y := float32(0)
				if d > 0 {
					y = 1
				}
				set.AddWeighted(id, t.Features, y, float32(math.Abs(d)))
			}
		}
	}
	if fit.Wants("mem") && mode != AutoVideo {
		o.MemTrace = func(t matte.MemTrace) {
			tl := p.lowTruth(dev, t.Frame)
			if tl == nil {
				return
			}
			phi := make([]float32, matte.NumMemFeatures)
			st := max(fit.Stride, 1)
			for y := st / 2; y < t.H; y += st {
				for x := st / 2; x < t.W; x += st {
					i := y*t.W + x
					t.Features(phi, i)
					fit.Mem.Add(id, phi, tl[i])
				}
			}
		}
	}
	if fit.Wants("region") && mode != AutoVideo {
		// One sample per region of the network's map: its features, the
		// share of it inside the true matte (a soft label), weighted by
		// its share of the frame (so that the fit weighs pixels, as J does).
		var sum []float64
		o.RegionTrace = func(t matte.RegionTrace) {
			tl := p.lowTruth(dev, t.Frame)
			if tl == nil || t.N == 0 {
				return
			}
			sum = append(sum[:0], make([]float64, 2*(t.N+1))...)
			for i, l := range t.Labels {
				sum[2*l] += float64(tl[i])
				sum[2*l+1]++
			}
			d := matte.NumRegionFeatures
			for l := 1; l <= t.N; l++ {
				a := sum[2*l+1]
				fit.Region.AddWeighted(id, t.Features[(l-1)*d:l*d], float32(sum[2*l]/a), float32(a/float64(t.W*t.H)))
			}
		}
	}
	if !fit.Wants("select") && !fit.Wants("trees") && !fit.Wants("auto") && !fit.Wants("gap") {
		o.Trace = trace
		return o
	}
	o.Trace = func(t matte.FuseTrace) {
		if trace != nil {
			trace(t)
		}
		set := &fit.Select
		if t.Auto {
			set = &fit.Auto
		}
		if tl := p.lowTruth(dev, t.Frame); tl != nil {
			fit.add(set, id, fit.Stride, t.W, t.H, matte.NumFusionFeatures, t.Features, tl)
		}
	}
	o.GapTrace = func(t matte.GapTrace) {
		if tl := p.lowTruth(dev, t.Frame); tl != nil {
			fit.add(&fit.Gap, id, 2*fit.Stride, t.W, t.H, matte.NumGapFeatures, t.Features, tl)
		}
	}
	return o
}

// lowTruth is frame i's true matte at the flow size (nil on an error: a
// frame left out of the fit).
func (p *prepared) lowTruth(dev kernels.Device, i int) []float32 {
	if p.truthLow == nil {
		p.truthLow = make([][]float32, len(p.truth))
	}
	if p.truthLow[i] != nil {
		return p.truthLow[i]
	}
	low, err := dev.NewImage(p.fw, p.fh, 1)
	if err != nil {
		return nil
	}
	defer dev.Free(low)
	if dev.WritePixels(p.fullA, p.truth[i]) != nil || dev.Ops().ResizeArea(low, p.fullA) != nil {
		return nil
	}
	v, err := dev.ReadPixels(low)
	if err != nil {
		return nil
	}
	p.truthLow[i] = v
	return v
}

// netView serves a NetCache's maps of one clip at the flow size, on the
// frames of a schedule (matte.Objectness).
type netView struct {
	nc     *NetCache
	clip   Clip
	plan   []bool // the frames the network runs on
	key    int
	w, h   int
	fw, fh int
	runs   map[int]bool
	crops  int // crop runs asked for (CropObjectness)
}

// Features serves the network's feature map of frame i
// (matte.FeatureObjectness).
func (v *netView) Features(ctx context.Context, i int) (matte.FeatureMap, error) {
	f, err := v.nc.Features(ctx, v.clip, i)
	if errors.Is(err, infer.ErrNoFeatures) {
		return matte.FeatureMap{}, matte.ErrNoFeatures
	}
	return matte.FeatureMap{W: f.W, H: f.H, C: f.C, Data: f.Data}, err
}

func (v *netView) Objectness(ctx context.Context, i int, dst []float32) (bool, error) {
	if i < 0 || i >= len(v.plan) || !v.plan[i] {
		return false, nil
	}
	m, err := v.nc.Map(ctx, v.clip, i)
	if err != nil {
		return false, err
	}
	infer.Resize(dst, v.fw, v.fh, m, v.w, v.h)
	v.runs[i] = true
	return true, nil
}

// CropObjectness serves the network's map of the part b (flow pixels) of
// frame i, run on the clip-size frame's part (matte.CropObjectness).
func (v *netView) CropObjectness(ctx context.Context, i int, b matte.Box, dst []float32) error {
	sx, sy := float64(v.w)/float64(v.fw), float64(v.h)/float64(v.fh)
	x0, y0 := int(float64(b.X0)*sx), int(float64(b.Y0)*sy)
	x1 := min(v.w, max(x0+1, int(math.Ceil(float64(b.X1)*sx))))
	y1 := min(v.h, max(y0+1, int(math.Ceil(float64(b.Y1)*sy))))
	m, err := v.nc.CropMap(ctx, v.clip, i, x0, y0, x1, y1)
	if err != nil {
		return err
	}
	infer.Resize(dst[:b.W()*b.H()], b.W(), b.H(), m, x1-x0, y1-y0)
	v.crops++
	return nil
}

// RunRealMattes runs the modes of cfg on one clip with its true masks
// and scores them with the DAVIS protocol.
func RunRealMattes(ctx context.Context, dev kernels.Device, cl Clip, cfg RealMatteConfig) ([]ClipResult, error) {
	p, err := prepare(dev, cl)
	if err != nil {
		return nil, err
	}
	p.refRadius, p.refEps = cfg.RefineRadius, cfg.RefineEps
	defer p.close(dev)
	c := p.c
	var out []ClipResult
	for _, mode := range cfg.Modes {
		r, err := p.runMode(ctx, dev, cfg, mode)
		if err != nil {
			return nil, fmt.Errorf("bench: %s %s: %w", c.Name(), mode, err)
		}
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "%-18s %-10s %s\n", c.Name(), mode, r.Scores)
		}
		out = append(out, r)
	}
	return out, nil
}

func (p *prepared) runMode(ctx context.Context, dev kernels.Device, cfg RealMatteConfig, mode MatteMode) (ClipResult, error) {
	c := p.c
	n := c.Frames
	r := ClipResult{Clip: c.Name(), Mode: mode, Frames: n}
	truth := p.truth
	if mode == SelectInverse {
		truth = make([][]float32, n)
		for i, t := range p.truth {
			truth[i] = make([]float32, len(t))
			for k, v := range t {
				truth[i][k] = 1 - v
			}
		}
	}
	key := -1
	switch mode {
	case SelectFirst, SelectInverse, NetSelect:
		key = 0
	case SelectMiddle:
		key = n / 2
	}
	if mode == NetSelect && p.picked != nil {
		return p.scoreNetSelect(ctx, cfg, r, p.picked, truth)
	}
	sched := cfg.Schedule
	if key >= 0 {
		sched = sched.ForSelect() // a select job's step (matte.Schedule.SelectEvery)
	}
	plan, err := p.runs(ctx, dev, sched, key)
	if err != nil {
		return r, err
	}
	view := &netView{nc: cfg.Net, clip: c.Clip, plan: plan, key: key, w: c.W, h: c.H, fw: p.fw, fh: p.fh, runs: map[int]bool{}}
	lows := make([][]float32, n)
	var matteTime time.Duration
	spent0, cropSpent0 := cfg.Net.Spent, cfg.Net.CropSpent
	t0 := time.Now()
	switch mode {
	case AutoStill:
		// As the worker does for an image job: the network's map at the
		// output size, snapped beyond the soft band.
		one := &hostFrames{dev: dev, frames: p.low.frames[:1]}
		plan, err := matte.PlanAuto(ctx, dev, one, view, p.fw, p.fh, matte.DefaultAutoOptions())
		if err != nil {
			return r, err
		}
		if plan.Kind == matte.AutoChroma {
			return r, fmt.Errorf("auto chose a chroma key on real footage")
		}
		m, err := cfg.Net.Map(ctx, c.Clip, 0)
		if err != nil {
			return r, err
		}
		still := slices.Clone(m)
		matte.SnapBand(still, c.W, c.H, matte.DefaultAutoOptions().Band*float32(c.W)/float32(p.fw))
		view.runs[0] = true
		sc := &Scorer{W: c.W, H: c.H}
		sc.Add(still, truth[0])
		r.Scores, r.Frames, r.NetRuns = sc.Scores(), 1, 1
		r.Matte = time.Since(t0) - (cfg.Net.Spent - spent0)
		if cfg.Keep[c.Name()] {
			r.Mattes = [][]float32{still}
		}
		return r, nil
	case NetAlone:
		sc := &Scorer{W: c.W, H: c.H}
		for i := 0; i < n; i++ {
			if !plan[i] {
				continue
			}
			m, err := cfg.Net.Map(ctx, c.Clip, i)
			if err != nil {
				return r, err
			}
			sc.Add(m, truth[i])
			r.NetRuns++
			if cfg.Keep[c.Name()] {
				r.Mattes = append(r.Mattes, m)
			}
		}
		r.Scores, r.Frames = sc.Scores(), r.NetRuns
		return r, nil
	case AutoVideo:
		ao := matte.DefaultAutoOptions()
		ao.Select.Flow = cfg.flow(ao.Select.Flow)
		ao.Select.Net = p.netOptions(dev, cfg, mode, nil)
		ao.Binary = !cfg.Soft
		plan, err := matte.PlanAuto(ctx, dev, p.low, view, p.fw, p.fh, ao)
		if err != nil {
			return r, err
		}
		if plan.Kind == matte.AutoChroma {
			return r, fmt.Errorf("auto chose a chroma key on real footage")
		}
		if err := plan.Mattes(ctx, p.low, collect(lows, dev)); err != nil {
			return r, err
		}
	default:
		keyLow, err := dev.NewImage(p.fw, p.fh, 1)
		if err != nil {
			return r, err
		}
		defer dev.Free(keyLow)
		if err := dev.WritePixels(p.fullA, truth[key]); err != nil {
			return r, err
		}
		if err := dev.Ops().ResizeArea(keyLow, p.fullA); err != nil {
			return r, err
		}
		so := matte.DefaultSelectOptions()
		so.Flow = cfg.flow(so.Flow)
		var picked map[int][]float32 // net-select: the object's regions per network frame
		var trace func(matte.FuseTrace)
		if mode == NetSelect || (mode == SelectFirst && slices.Contains(cfg.Modes, NetSelect)) {
			// net-select's picks; a select run keeps them for the
			// net-select mode that follows it.
			picked = map[int][]float32{}
			trace = func(t matte.FuseTrace) { picked[t.Frame] = slices.Clone(t.NetSelect) }
			if mode == SelectFirst {
				p.picked = picked
			}
		}
		so.Net = p.netOptions(dev, cfg, mode, trace)
		if cfg.SelectBand != 0 {
			so.Band = max(cfg.SelectBand, 0)
		}
		if cfg.Soft || cfg.SelectBand < 0 {
			so.Binary = false
		}
		if err := matte.Propagate(ctx, dev, p.low, view, key, keyLow, so, collect(lows, dev)); err != nil {
			return r, err
		}
		if mode == NetSelect {
			return p.scoreNetSelect(ctx, cfg, r, picked, truth)
		}
		var copyJ []float64
		for i := range truth {
			copyJ = append(copyJ, JaccardIndex(binary(truth[key]), binary(truth[i])))
		}
		r.CopyJ = protocolMean(copyJ)
	}
	matteTime = time.Since(t0) - (cfg.Net.Spent - spent0) - (cfg.Net.CropSpent - cropSpent0)
	r.NetRuns, r.CropRuns = len(view.runs), view.crops
	sc := &Scorer{W: c.W, H: c.H}
	var kept [][]float32 // every frame's matte, when net-select's frames are scored too
	for i := 0; i < n; i++ {
		var m []float32
		if i == key {
			m = truth[i]
		} else {
			var err error
			if m, err = p.refineOne(dev, lows[i], i, &matteTime); err != nil {
				return r, err
			}
		}
		sc.Add(m, truth[i])
		if mode == SelectFirst && p.picked != nil {
			kept = append(kept, m)
		}
		if cfg.Keep[c.Name()] {
			r.Mattes = append(r.Mattes, m)
		}
	}
	r.Scores = sc.Scores()
	r.Matte = matteTime
	if mode == SelectFirst && p.picked != nil {
		// select on net-select's frames, for the net-select row.
		on := &Scorer{W: c.W, H: c.H}
		for i := 0; i < n; i++ {
			if _, ok := p.picked[i]; ok && i < len(kept) {
				on.Add(kept[i], truth[i])
			}
		}
		p.selOnNet = on.Scores()
	}
	return r, nil
}

// scoreNetSelect scores the network's own full-size maps on the regions
// select took as the object (picked, at the flow size, per network frame).
func (p *prepared) scoreNetSelect(ctx context.Context, cfg RealMatteConfig, r ClipResult, picked map[int][]float32, truth [][]float32) (ClipResult, error) {
	c := p.c
	sc := &Scorer{W: c.W, H: c.H}
	up := make([]float32, c.W*c.H)
	for i := 0; i < c.Frames; i++ {
		sel, ok := picked[i]
		if !ok {
			continue
		}
		m, err := cfg.Net.Map(ctx, c.Clip, i)
		if err != nil {
			return r, err
		}
		for k, v := range sel {
			if v > 0 {
				sel[k] = 1
			}
		}
		infer.Resize(up, c.W, c.H, sel, p.fw, p.fh)
		out := make([]float32, len(m))
		for k, v := range m {
			if up[k] >= 0.5 {
				out[k] = v
			}
		}
		sc.Add(out, truth[i])
		r.NetRuns++
		if cfg.Keep[c.Name()] {
			r.Mattes = append(r.Mattes, out)
		}
	}
	r.Scores, r.Frames = sc.Scores(), r.NetRuns
	if len(p.selOnNet.PerJ) > 0 {
		on := p.selOnNet
		r.SelectOnNet = &on
	}
	return r, nil
}

// refineOne refines frame i's flow-size matte at the clip size.
func (p *prepared) refineOne(dev kernels.Device, low []float32, i int, elapsed *time.Duration) ([]float32, error) {
	c := p.c
	if p.ref == nil {
		var err error
		if p.ref, err = matte.NewRefiner(dev, c.W, c.H, p.fw, p.fh); err != nil {
			return nil, err
		}
		p.ref.SetFilter(p.refRadius, p.refEps)
		if p.lowA, err = dev.NewImage(p.fw, p.fh, 1); err != nil {
			return nil, err
		}
	}
	if err := p.linearFrame(dev, i); err != nil {
		return nil, err
	}
	t0 := time.Now()
	if err := dev.WritePixels(p.lowA, low); err != nil {
		return nil, err
	}
	if err := p.ref.Refine(p.fullA, p.full, p.lowA); err != nil {
		return nil, err
	}
	m, err := dev.ReadPixels(p.fullA)
	*elapsed += time.Since(t0)
	return m, err
}

// protocolMean is the mean without the first and the last value (the
// DAVIS protocol), or of all values for fewer than 3.
func protocolMean(v []float64) float64 {
	lo, hi := 1, len(v)-1
	if len(v) < 3 {
		lo, hi = 0, len(v)
	}
	s := 0.0
	for _, x := range v[lo:hi] {
		s += x
	}
	return s / math.Max(1, float64(hi-lo))
}

// RealMatteSummary is the mean over clips of one mode.
type RealMatteSummary struct {
	Mode                 MatteMode
	Clips                int
	J, F, Decay, Flicker float64
	Interior, Half       float64 // see MatteScores
	CopyJ                float64
	BelowCopy            []string // clips whose J is below copying the keyframe
	FramesPerSecond      float64  // matte work without the network
	NetRuns, Frames      int
	CropRuns             int // the network's runs on crops (ClipResult.CropRuns)
}

// Summarise groups results by mode (in AllMatteModes order).
func Summarise(rs []ClipResult) []RealMatteSummary {
	by := map[MatteMode]*RealMatteSummary{}
	var secs = map[MatteMode]float64{}
	for _, r := range rs {
		s := by[r.Mode]
		if s == nil {
			s = &RealMatteSummary{Mode: r.Mode}
			by[r.Mode] = s
		}
		s.Clips++
		s.J += r.Scores.J
		s.F += r.Scores.F
		s.Decay += r.Scores.JDecay
		s.Flicker += r.Scores.Flicker
		s.Interior += r.Scores.Interior
		s.Half += r.Scores.Half
		s.CopyJ += r.CopyJ
		s.NetRuns += r.NetRuns
		s.CropRuns += r.CropRuns
		s.Frames += r.Frames
		secs[r.Mode] += r.Matte.Seconds()
		if r.CopyJ > 0 && r.Scores.J < r.CopyJ {
			s.BelowCopy = append(s.BelowCopy, r.Clip)
		}
	}
	var out []RealMatteSummary
	for _, m := range append(AllMatteModes[:len(AllMatteModes):len(AllMatteModes)], diagnosticModes...) {
		s := by[m]
		if s == nil {
			continue
		}
		k := float64(s.Clips)
		s.J, s.F, s.Decay, s.Flicker, s.CopyJ = s.J/k, s.F/k, s.Decay/k, s.Flicker/k, s.CopyJ/k
		s.Interior, s.Half = s.Interior/k, s.Half/k
		if secs[m] > 0 {
			s.FramesPerSecond = float64(s.Frames) / secs[m]
		}
		sort.Strings(s.BelowCopy)
		out = append(out, *s)
	}
	return out
}
