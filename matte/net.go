package matte

import (
	"context"
	"errors"
	"math"
	"slices"
)

// Objectness is a segmentation network's view of a clip at the flow size:
// P(object) per pixel, for the frames its schedule ran it on.
type Objectness interface {
	// Objectness writes frame i's map (w*h values in [0,1] at the flow
	// size) into dst and reports false when the network did not run on
	// frame i (see Schedule).
	Objectness(ctx context.Context, i int, dst []float32) (bool, error)
}

// Schedule says on which frames the network runs: every Every-th frame
// from frame 0, the last frame and the keyframe (Every 1 runs it on all),
// and at which input size.
type Schedule struct {
	Every int
	// SelectEvery, when above 0, is the step a select job takes instead
	// of Every (Every is then auto's): the two modes gain differently
	// from more network frames (ForSelect).
	SelectEvery int
	// Size is the network's square input size (infer.Card.At); 0 runs
	// the model at the size its card gives.
	Size int
	// Motion, when above 0, places the same number of runs (or fewer)
	// where the clip's picture changes (see schedule.go, Plan): the
	// share, up to 1, of each frame's step that follows its change; the
	// rest is even. 0 is the fixed schedule.
	Motion float64
}

// DefaultCPUSchedule runs the network on every 2nd frame of an auto job
// and every 4th of a select job, with propagation between;
// DefaultGPUSchedule on every frame of an auto job and every 4th of a
// select job (see docs/mattes.md, Schedule). On the 30 dev clips
// (network every 1, 2 and 4 frames, each fold) auto gains from more
// network frames on both folds (J +0.010 / +0.010 at every 2nd, +0.012 /
// +0.013 at every frame, over every 4th) while select loses (−0.011 /
// −0.009 at every frame: each network frame is one more chance to take a
// wrong region, and a clip that flips does not come back). On the CPU
// the 8-bit network (infer.QuantizeGraph) pays for auto's every 2nd
// frame: 121 runs of 0.38 s in a 240-frame job against 61 of 1.05-1.27 s
// in fp32 before.
var (
	DefaultCPUSchedule = Schedule{Every: 2, SelectEvery: 4}
	DefaultGPUSchedule = Schedule{Every: 1, SelectEvery: 4}
)

// MaxEvery is the largest step of the fixed schedule a job may ask for
// (`vfx render --model-every`): a bound, not advice; the longer the
// gap, the further the carried matte drifts from a network frame (the
// steps measured are 1, 2 and 4: docs/mattes.md, Schedule).
const MaxEvery = 16

// ForSelect is the schedule a select job runs: Every set to
// SelectEvery when that is above 0.
func (s Schedule) ForSelect() Schedule {
	if s.SelectEvery > 0 {
		s.Every, s.SelectEvery = s.SelectEvery, 0
	}
	return s
}

// Runs reports whether the fixed schedule runs the network on frame i of
// n with keyframe key (key < 0: none); Plan gives the motion schedule's
// frames.
func (s Schedule) Runs(i, n, key int) bool {
	k := max(s.Every, 1)
	return i%k == 0 || i == n-1 || i == key
}

// NetOptions tune how the network's map is fused with propagation.
type NetOptions struct {
	// BinaryLevel is the level at which SelectOptions.Binary and
	// AutoOptions.Binary make an emitted matte 0 or 1 (1 at or above
	// it); 0 means 0.5.
	BinaryLevel float32
	// Gain scales the network's log-odds against the propagated matte's
	// (whose log-odds are clamped to ±PropClamp).
	Gain, PropClamp float32
	// TrustLow and TrustHigh map the keyframe's agreement with the
	// network (IoU of the selected regions and the keyframe matte) to the
	// trust in the network: 0 at or below TrustLow, 1 at or above TrustHigh.
	TrustLow, TrustHigh float64
	// Reach is the radius, as a share of the square root of the object's
	// area, around the propagated object within which the network may
	// move its boundary on one network frame.
	Reach float64
	// Rescue is how far, in widths of the object (square roots of its
	// area on the keyframe), the object may have moved between two frames
	// the network ran on when motion lost it: see netFuser.rescue.
	Rescue float64
	// Model, when it has weights for a step, replaces that step's hand
	// rule (the per-pixel sum below, the gap fill's blend) by its fitted
	// logistic model; nil keeps every hand rule.
	Model *FusionModel
	// Trace and GapTrace, when set, receive the features of every frame
	// the fusion and the gap fill make (bench: fitting and diagnostics).
	// The slices are reused after the call returns.
	Trace    func(FuseTrace)
	GapTrace func(GapTrace)
	// GateTrace, when set, receives the frame gate's features and both
	// candidates on every frame the network ran on (see gate.go).
	GateTrace func(GateTrace)
	// CropArea, when positive and the network's maps come from a
	// CropObjectness, runs the network a second time on a frame it ran on
	// where the carried shape covers less than this share of the frame
	// (on select's keyframe: the keyframe matte), on a square crop around
	// the shape (see cropBox, crop.go); inside the box the fusion sees
	// the larger of the crop's map and the full frame's. 0 (the default)
	// turns it off: at SmallSubjectArea it gained on fold A and changed
	// nothing on fold B (docs/mattes.md, Small subjects).
	CropArea float64
	// CropMargin is how much of the shape's longer side the crop box adds
	// on each side.
	CropMargin float64
	// CropTrace, when set, receives each crop run's frame and box.
	CropTrace func(frame int, b Box)
	// MemRecent adds the last frame the network ran on (with its fused
	// matte) to the memory beside select's keyframe (memory.go); the
	// memory is used when Model has memory weights and the network gives
	// features (FeatureObjectness).
	MemRecent bool
	// MemRegions applies the memory model region by region: in a region
	// of the network's map (>= 0.5) the network's values (raised where the
	// model is higher) weigh as much as the region's mean P(object) under
	// the model, the model's values the rest; outside every region the
	// model's (memRegions).
	MemRegions bool
	// MemRefind, with MemRegions, on a frame where the carried shape is
	// lost (the network's regions near it cover under 0.3 of it) and the
	// rescue finds nothing, takes each region of the network's map whose
	// mean memory-model P(object) is at least one half as the object's:
	// the object re-found by its features where motion carried the shape
	// off it (onto a bush it passed in front of). Off by default: the
	// frozen encoder's coarse features score small scraps of the scene as
	// the object too (scooter-gray lost its rider; docs/mattes.md,
	// session 33).
	MemRefind bool
	// RegionTrace, when set, receives MemRegions' region features on
	// every frame the network ran on (select with memory weights).
	RegionTrace func(RegionTrace)
	// MemTrace, when set, receives the memory's readouts on every frame
	// the network ran on (select only; it turns the memory's reads on
	// even without memory weights, which leave the map as it is).
	MemTrace func(MemTrace)
}

// DefaultNetOptions are the defaults: IoU 0.5 is where the network starts
// to count (the detection convention) and full trust from 0.8.
// The fitted model is the embedded matte/fusion.json.
func DefaultNetOptions() NetOptions {
	m, err := DefaultFusionModel()
	if err != nil {
		panic(err) // the embedded file is checked by TestDefaultFusionModel
	}
	return NetOptions{Gain: 2, PropClamp: 4, TrustLow: 0.5, TrustHigh: 0.8, Reach: 0.15, Rescue: 3, Model: m,
		CropMargin: DefaultCropMargin, MemRegions: true}
}

// HandNetOptions are DefaultNetOptions with every hand rule and no fitted
// model: the baseline a fit must beat.
func HandNetOptions() NetOptions {
	o := DefaultNetOptions()
	o.Model = nil
	return o
}

// netFuser holds the per-clip state of the fusion.
type netFuser struct {
	o     NetOptions
	w, h  int
	trust float64 // from the keyframe's IoU; <0 before it is set
	tPos  float64 // trust in the network's positives, from the keyframe (merged regions, rescue, gate)
	// keyArea is the area of the keyframe matte; last is the object's
	// centroid on the last frame the network ran on (lastOK false before),
	// others the pixels of other objects' regions there.
	keyArea int
	seen    bool // the network's map covers most of the keyframe matte (in any region)
	last    [2]float64
	lastOK  bool
	others  []bool
	rescued int32 // the region rescue gave the object on this frame
	all     bool  // auto: every region of the network is the subject
	lab     []int32
	area    []int
	ovIn    []int
	ovDil   []int
	dist    []float32
	queue   []int32
	frame   int       // the frame being fused (for traces)
	phi     []float32 // features of every pixel, when a model or a trace needs them
	nsel    []float32 // the network's map on the object's regions (traces)
	// colour is the keyframe colour model's log-odds of each pixel of the
	// frame being fused, for the gate (nil: none; see colourEvidence).
	colour []float32
	// mem is select's memory of the object (nil: none); feat the feature
	// map of the frame being fused, reads and mphi scratch.
	mem       *memory
	feat      FeatureMap
	reads     [][]float32
	mphi      []float32
	mout      []float32 // MemRegions: the model's map
	msum      []float64 // MemRegions: each region's sum of it
	nsum      []float64 // MemRegions: each region's sum of the network's map
	csum      []int     // MemRegions: each region's pixels inside the carried matte
	rphi      []float32 // MemRegions: the regions' features (region k at k-1)
	moutFrame int       // the frame mout was made on (-1: none yet; MemRefind)
	// sweepArea is the largest fused matte (pixels >= 0.5) on the network
	// frames of this sweep so far (see fuse); 0 at a sweep's start.
	sweepArea int
}

// memModel reports whether the options' fusion model has memory weights.
func (o NetOptions) memModel() bool {
	return o.Model != nil && len(o.Model.Mem) == NumMemFeatures
}

// memWanted reports whether the memory is read: fitted weights to use, or
// a trace to feed.
func (f *netFuser) memWanted() bool {
	return f.o.memModel() || f.o.MemTrace != nil
}

// initMemory remembers the keyframe index with its matte (select), when
// the memory is wanted and the network gives features.
func (f *netFuser) initMemory(ctx context.Context, net Objectness, index int, key []float32) error {
	fo, ok := net.(FeatureObjectness)
	if !ok || !f.memWanted() {
		return nil
	}
	fm, err := fo.Features(ctx, index)
	if errors.Is(err, ErrNoFeatures) {
		return nil // select without its memory
	}
	if err != nil {
		return err
	}
	f.mem, err = newMemory(fm, key, f.w, f.h)
	if err != nil {
		return err
	}
	f.mem.key0 = index
	return nil
}

// memInto reads the memory on frame i and, with memory weights, replaces
// the network's map nmap by the memory model's P(object) per pixel.
// prop is the matte carried to frame i (MemRegions' region model).
func (f *netFuser) memInto(ctx context.Context, net Objectness, i int, nmap, prop []float32) error {
	if f.mem == nil {
		return nil
	}
	fm, err := net.(FeatureObjectness).Features(ctx, i)
	if err != nil {
		return err
	}
	f.feat = fm
	if len(f.reads) != len(MemTaus) {
		f.reads = make([][]float32, len(MemTaus))
		for k := range f.reads {
			f.reads[k] = make([]float32, f.w*f.h)
		}
		f.mphi = make([]float32, NumMemFeatures)
	}
	if err := f.mem.read(ctx, fm, f.w, f.h, f.reads); err != nil {
		return err
	}
	if f.o.MemTrace != nil {
		f.o.MemTrace(MemTrace{Frame: i, Key: f.mem.key0, W: f.w, H: f.h, Net: nmap, Reads: f.reads})
	}
	if !f.o.memModel() {
		return nil
	}
	wt := f.o.Model.Mem
	far := memFar(i, f.mem.key0)
	if f.o.MemRegions {
		f.memRegions(nmap, prop, wt, far)
		return nil
	}
	for p, v := range nmap {
		memFeatures(f.mphi, v, f.reads, far, p)
		nmap[p] = sigmoid(dot(wt, f.mphi))
	}
	return nil
}

// memRemember makes the frame just fused (its matte out) the memory's
// recent frame, with NetOptions.MemRecent.
func (f *netFuser) memRemember(out []float32) {
	if f.mem != nil && f.o.MemRecent && f.feat.Data != nil {
		f.mem.remember(f.feat, out, f.w, f.h)
	}
}

func newNetFuser(w, h int, o NetOptions) *netFuser {
	return &netFuser{o: o, w: w, h: h, trust: -1, moutFrame: -1, lab: make([]int32, w*h), dist: make([]float32, w*h)}
}

func logit(p float32) float32 {
	p = min(max(p, 1e-4), 1-1e-4)
	return float32(math.Log(float64(p / (1 - p))))
}

func sigmoid(x float32) float32 { return float32(1 / (1 + math.Exp(-float64(x)))) }

// label marks the 4-connected regions of net >= 0.5 in f.lab (0 = none,
// 1.. = region) and returns the region count.
func (f *netFuser) label(net []float32) int {
	w, h := f.w, f.h
	for i := range f.lab {
		f.lab[i] = 0
	}
	f.area = f.area[:0]
	f.area = append(f.area, 0)
	n := int32(0)
	for s := range net {
		if net[s] < 0.5 || f.lab[s] != 0 {
			continue
		}
		n++
		f.area = append(f.area, 0)
		f.queue = append(f.queue[:0], int32(s))
		f.lab[s] = n
		for q := 0; q < len(f.queue); q++ {
			p := int(f.queue[q])
			f.area[n]++
			x, y := p%w, p/w
			for _, nb := range [4]int{p - 1, p + 1, p - w, p + w} {
				switch {
				case nb == p-1 && x == 0, nb == p+1 && x == w-1, nb == p-w && y == 0, nb == p+w && y == h-1:
					continue
				}
				if net[nb] >= 0.5 && f.lab[nb] == 0 {
					f.lab[nb] = n
					f.queue = append(f.queue, int32(nb))
				}
			}
		}
	}
	return int(n)
}

// distance writes the chamfer distance (pixels) to the nearest pixel of
// mask >= 0.5 into f.dist.
func (f *netFuser) distance(mask []float32) {
	w, h := f.w, f.h
	const inf = 1e9
	d := f.dist
	for i, v := range mask {
		if v >= 0.5 {
			d[i] = 0
		} else {
			d[i] = inf
		}
	}
	const a, b = 1, 1.4142135
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i := y*w + x
			v := d[i]
			if x > 0 {
				v = min(v, d[i-1]+a)
			}
			if y > 0 {
				v = min(v, d[i-w]+a)
				if x > 0 {
					v = min(v, d[i-w-1]+b)
				}
				if x < w-1 {
					v = min(v, d[i-w+1]+b)
				}
			}
			d[i] = v
		}
	}
	for y := h - 1; y >= 0; y-- {
		for x := w - 1; x >= 0; x-- {
			i := y*w + x
			v := d[i]
			if x < w-1 {
				v = min(v, d[i+1]+a)
			}
			if y < h-1 {
				v = min(v, d[i+w]+a)
				if x < w-1 {
					v = min(v, d[i+w+1]+b)
				}
				if x > 0 {
					v = min(v, d[i+w-1]+b)
				}
			}
			d[i] = v
		}
	}
}

// selection labels net's regions and decides what each is to the object
// whose shape (propagated or given) is shape: the object's when most of
// the region lies inside the shape; merged with something else when it
// holds most of the shape but lies mostly outside it; else another
// object. It returns the per-region kinds, the reach radius and the
// shape's area.
func (f *netFuser) selection(net, shape []float32) (sel []regionKind, reach float32, shapeArea int) {
	n := f.label(net)
	f.distance(shape)
	for _, v := range shape {
		if v >= 0.5 {
			shapeArea++
		}
	}
	reach = float32(max(2, f.o.Reach*math.Sqrt(float64(shapeArea))))
	f.ovIn = resize(f.ovIn, n+1)
	f.ovDil = resize(f.ovDil, n+1)
	for i, l := range f.lab {
		if l == 0 {
			continue
		}
		if f.dist[i] == 0 {
			f.ovIn[l]++
		}
		if f.dist[i] <= reach {
			f.ovDil[l]++
		}
	}
	// Near a compact object, a region within reach counts as inside it
	// (the object moved since the shape was carried); a shape that covers
	// most of the frame (a background picked as the object) has every
	// region within reach, so there only overlap counts.
	big := 2*shapeArea > f.w*f.h
	sel = make([]regionKind, n+1)
	for l := 1; l <= n; l++ {
		switch {
		case f.all || (shapeArea > 0 && (2*f.ovIn[l] >= f.area[l] || (!big && 2*f.ovDil[l] >= f.area[l]))):
			sel[l] = regionObject
		case shapeArea > 0 && 2*f.ovIn[l] >= shapeArea:
			sel[l] = regionMerged
		default:
			sel[l] = regionOther
		}
	}
	return sel, reach, shapeArea
}

// regionKind is what a region of the network's map is to the selected
// object.
type regionKind uint8

const (
	regionOther  regionKind = iota // another object: evidence against
	regionObject                   // the object (most of the region lies in its shape)
	regionMerged                   // holds most of the object and much else: no evidence either way
)

func resize(s []int, n int) []int {
	if cap(s) < n {
		s = make([]int, n)
	}
	s = s[:n]
	for i := range s {
		s[i] = 0
	}
	return s
}

// setTrust measures on the keyframe how well the network's selected
// regions explain the keyframe matte. trust (from their IoU) decides
// whether the keyframe is followed as the complement of what the network
// sees; the trust in the network's positives (tPos) comes from their
// precision: the share of the object's regions that lies in the keyframe
// matte. The trust in its negatives is measured on every frame (see fuse).
func (f *netFuser) setTrust(net, key []float32) {
	if f.all {
		f.trust, f.tPos = 1, 1
		return
	}
	sel, _, _ := f.selection(net, key)
	var in, un, pos int
	for i, l := range f.lab {
		p := l != 0 && sel[l] == regionObject
		g := key[i] >= 0.5
		if p && g {
			in++
		}
		if p || g {
			un++
		}
		if p {
			pos++
		}
	}
	iou, prec := 1.0, 0.0
	if un > 0 {
		iou = float64(in) / float64(un)
	}
	if pos > 0 {
		prec = float64(in) / float64(pos)
	}
	f.trust = f.ramp(iou)
	f.tPos = f.ramp(prec)
	f.keyArea = 0
	hit := 0
	for i, v := range key {
		if v >= 0.5 {
			f.keyArea++
			if net[i] >= 0.5 {
				hit++
			}
		}
	}
	f.seen = 2*hit >= f.keyArea && hit > 0
}

// ramp maps an agreement in [0,1] to a trust: 0 at or below TrustLow, 1
// at or above TrustHigh.
func (f *netFuser) ramp(v float64) float64 {
	return min(max((v-f.o.TrustLow)/(f.o.TrustHigh-f.o.TrustLow), 0), 1)
}

// fuse combines the propagated matte prop (soft) with the network's map
// net into dst, with shape (the previous matte warped to this frame)
// deciding what each of the network's regions is to the object.
//
// Per pixel, in log-odds: the propagated matte (clamped), plus the
// network's evidence times Gain times a weight. In a region of the object
// the evidence is the network's P(object) (>= 0.5: for the object),
// weighted by the trust in its positives, however far the object moved.
// Outside every region it is the same P (against the object), weighted by
// the trust in its negatives: the share of the shape that the object's
// regions cover on this frame (its recall), so that where the network
// sees only part of the object, or loses it, propagation holds the rest;
// beyond reach of the shape the object cannot be. In a region of another
// object the evidence is 1-P with weight 1 whatever the trust, so that the
// matte never leaks into another salient object and never swaps to it. A
// region merged with something else gives evidence only inside the
// carried shape (P, weighted by the trust in its positives): with the
// network on every 2nd frame, a shape inside a merged region otherwise
// shrinks a little between network frames and nothing restores it
// (scooter-gray at k=2: J 0.12 without this, 0.29 with it).
func (f *netFuser) fuse(dst, prop, shape, net, flow []float32) {
	sel, reach, shapeArea := f.selection(net, shape)
	canRefind := !f.all && f.o.MemRefind && f.mem != nil && f.moutFrame == f.frame && len(f.mout) == len(net)
	if f.all && flow != nil {
		f.stillRegions(sel, flow)
	}
	f.rescued = 0
	tPos, tNeg := f.tPos, 1.0
	if !f.all && shapeArea > 0 {
		cov, merged := 0, 0
		for i, l := range f.lab {
			if l != 0 && sel[l] == regionObject && f.dist[i] <= reach {
				cov++
			}
			if l != 0 && sel[l] == regionMerged && f.dist[i] == 0 {
				merged++
			}
		}
		c := float64(cov) / float64(shapeArea)
		tNeg = min(max((c-0.3)/0.4, 0), 1)
		// A region merged with something else that holds the shape
		// explains it too: the object is there, only not seen alone, and
		// nothing was lost (swing: the girl and the swing's frame in one
		// region; J 0.46 with a rescue on such frames, 0.75 without).
		lost := float64(cov+merged) < 0.3*float64(shapeArea)
		if lost && (f.rescue(sel, shape) || (canRefind && f.refind(sel))) {
			tNeg = 1 // the carried shape was wrong: the network's negatives hold
		}
	} else if !f.all {
		tNeg = 0
		if f.rescue(sel, shape) {
			tNeg = 1
		}
	}
	// Each region of the object is trusted as far as it lies in (or, for
	// a compact object, near) the carried shape on this frame: a region
	// that also holds another object's body must not pull the matte into
	// it (flamingo, a flock: J 0.56 without this, 0.82 with). That share
	// is the region's precision measured on this frame; the keyframe's
	// (tPos) does not scale it: a subject the network saw only merged
	// with its surroundings on the keyframe (tPos 0) and alone later had
	// its later regions ignored, and the matte drifted off it
	// (rollerblade: J 0.586 with tPos, 0.836 without; docs/mattes.md).
	//
	// Nor is a region much larger than the carried shape another object's
	// when the object itself was as large on an earlier network frame of
	// this sweep: the carried shape had eroded (the network missed a part
	// on one frame and the shape lost it), and the region is the object
	// grown back (motocross-bumps: the rider's bike, lost on frame 44,
	// came back only as a region twice the eroded shape; J 0.767 against
	// 0.814 when the sweep's largest matte sets the region's trust).
	wr := make([]float32, len(sel))
	big := 2*shapeArea > f.w*f.h
	for l := 1; l < len(sel); l++ {
		if sel[l] != regionObject {
			continue
		}
		in := f.ovIn[l]
		if !big {
			in = f.ovDil[l]
		}
		a := float64(f.area[l])
		w := f.ramp(max(float64(in), float64(max(shapeArea, f.sweepArea))) / a)
		if f.all || int32(l) == f.rescued {
			w = 1
		}
		wr[l] = float32(w)
	}
	var model []float64
	var trees Trees
	if m := f.o.Model; m != nil {
		model, trees = m.Select, m.SelectTrees
		if f.all {
			model, trees = m.Auto, nil
		}
	}
	if !f.all && tNeg == 0 {
		// The network does not see the carried object on this frame (its
		// regions near the shape cover under 0.3 of it, and no rescue):
		// none of its evidence is trusted, and the fitted fusion, whose
		// every training frame showed a subject the network sees, would
		// weigh its negatives anyway (a keyframe on something the network
		// does not see was erased). The hand rule keeps the carried matte.
		model = nil
	}
	if len(model) == 0 && f.o.Trace == nil {
		f.handRule(dst, prop, net, sel, wr, reach, tPos, tNeg)
		f.gate(dst, net, shape, sel, shapeArea, tPos, tNeg)
		f.remember(dst, sel)
		f.noteArea(dst)
		return
	}
	f.features(prop, net, sel, wr, reach, shapeArea, tPos, tNeg)
	if len(model) == 0 {
		f.handRule(dst, prop, net, sel, wr, reach, tPos, tNeg)
	} else {
		for i := range dst {
			// No trees: a margin of 0, the linear model's sum unchanged.
			x := f.phi[i*NumFusionFeatures : (i+1)*NumFusionFeatures]
			dst[i] = sigmoid(dot(model, x) + float32(trees.Margin(x)))
		}
	}
	if f.o.Trace != nil {
		if len(f.nsel) != len(net) {
			f.nsel = make([]float32, len(net))
		}
		for i, l := range f.lab {
			f.nsel[i] = 0
			if l != 0 && sel[l] == regionObject {
				f.nsel[i] = net[i]
			}
		}
		f.o.Trace(FuseTrace{Frame: f.frame, W: f.w, H: f.h, Features: f.phi, NetSelect: f.nsel, Out: dst, Auto: f.all})
	}
	f.gate(dst, net, shape, sel, shapeArea, tPos, tNeg)
	f.remember(dst, sel)
	f.noteArea(dst)
}

// refind makes each region of sel that is another object's the object's
// when the memory model's mean P(object) over it (mout, this frame's) is
// at least one half (NetOptions.MemRefind), and reports whether it made
// any. fuse asks it only where the carried shape is lost and the rescue
// found nothing.
func (f *netFuser) refind(sel []regionKind) bool {
	found := false
	sum := make([]float64, len(sel))
	for i, l := range f.lab {
		if l != 0 {
			sum[l] += float64(f.mout[i])
		}
	}
	for l := 1; l < len(sel); l++ {
		if sel[l] == regionOther && 2*sum[l] >= float64(f.area[l]) {
			sel[l], found = regionObject, true
		}
	}
	return found
}

// noteArea keeps the largest fused matte of the sweep (sweepArea).
func (f *netFuser) noteArea(m []float32) {
	a := 0
	for _, v := range m {
		if v >= 0.5 {
			a++
		}
	}
	f.sweepArea = max(f.sweepArea, a)
}

// handRule is the hand-set per-pixel sum of the fusion (see fuse).
func (f *netFuser) handRule(dst, prop, net []float32, sel []regionKind, wr []float32, reach float32, tPos, tNeg float64) {
	g, pc := f.o.Gain, f.o.PropClamp
	for i := range dst {
		lp := min(max(logit(prop[i]), -pc), pc)
		l := f.lab[i]
		switch {
		case l != 0 && sel[l] == regionObject:
			lp += g * wr[l] * logit(net[i])
		case l != 0 && sel[l] == regionMerged:
			// Inside the carried shape the network agrees that an
			// object is there: its positives hold the shape against
			// erosion between network frames, as far as they are
			// trusted. Beyond the shape the region gives no evidence,
			// so the matte never grows into what it is merged with.
			if f.dist[i] == 0 {
				lp += g * float32(tPos) * logit(net[i])
			}
		case l != 0:
			lp += g * logit(1-net[i])
		case !f.all && f.dist[i] > reach:
			dst[i] = min(prop[i], sigmoid(-pc))
			continue
		default:
			lp += g * float32(tNeg) * logit(net[i])
		}
		dst[i] = sigmoid(lp)
	}
}

// features writes every pixel's fusion features (see fBias …) into f.phi.
func (f *netFuser) features(prop, net []float32, sel []regionKind, wr []float32, reach float32, shapeArea int, tPos, tNeg float64) {
	n := len(prop)
	if len(f.phi) != n*NumFusionFeatures {
		f.phi = make([]float32, n*NumFusionFeatures)
	}
	pc := f.o.PropClamp
	for i := 0; i < n; i++ {
		phi := f.phi[i*NumFusionFeatures : (i+1)*NumFusionFeatures]
		for k := range phi {
			phi[k] = 0
		}
		lp := min(max(logit(prop[i]), -pc), pc)
		ln := clampLogit(net[i])
		phi[fBias], phi[fProp] = 1, lp
		if d := f.dist[i]; d > 0 {
			phi[fDist] = min(d/max(reach, 1), 4)
		}
		l := f.lab[i]
		// A merged region gives no evidence beyond the carried shape (the
		// hand rule's; see handRule): none of its region features there
		// either, so a fit cannot grow the matte into what the object is
		// merged with (a swing's frame).
		switch {
		case l != 0 && l == f.rescued:
			// The rescue found the object away from the carried shape
			// (it had lost it): its region counts as if the shape were
			// there, as the hand rule trusts it whole.
			phi[fDist], phi[fRegIn], phi[fRegNear] = 0, ln, ln
		case l != 0 && !(sel[l] == regionMerged && f.dist[i] > 0):
			a := float32(f.area[l])
			phi[fRegIn], phi[fRegNear] = float32(f.ovIn[l])/a*ln, float32(f.ovDil[l])/a*ln
			phi[fRegSize] = 3
			if ref := max(shapeArea, f.sweepArea); ref > 0 {
				phi[fRegSize] = min(max(float32(math.Log(float64(a)/float64(ref))), -3), 3)
			}
		}
		switch {
		case l != 0 && sel[l] == regionObject:
			phi[fObjW], phi[fObj], phi[fObjI], phi[fPropObj] = wr[l]*ln, ln, 1, wr[l]*lp
		case l != 0 && sel[l] == regionMerged:
			if f.dist[i] == 0 {
				phi[fMergedInW], phi[fMergedIn], phi[fMergedInI] = float32(tPos)*ln, ln, 1
			} else {
				phi[fMergedOutI] = 1
			}
		case l != 0:
			phi[fOther], phi[fOtherI] = ln, 1
		case !f.all && f.dist[i] > reach:
			phi[fFar], phi[fFarProp] = 1, lp
		default:
			phi[fNoneW], phi[fNone] = float32(tNeg)*ln, ln
		}
	}
}

// rescue runs where none of the network's regions explains the carried
// shape although the network saw the object on the keyframe (its
// positives are trusted, or its map covers most of the keyframe matte,
// even if merged into a larger region): motion lost a fast object, or
// carried the shape off it. The region of another
// object nearest to where the object was, of a size like the object's
// on the keyframe (a third to three times), within Rescue widths of it,
// and not one of the other objects of the last network frame, becomes
// the object's, and it reports true.
func (f *netFuser) rescue(sel []regionKind, shape []float32) bool {
	if (f.tPos <= 0 && !f.seen) || f.keyArea == 0 {
		return false
	}
	at, ok := f.last, f.lastOK
	if c, in := Centroid(shape, f.w); in {
		at, ok = c, true
	}
	if !ok {
		return false
	}
	n := len(sel) - 1
	var sx, sy = make([]float64, n+1), make([]float64, n+1)
	known := make([]int, n+1)
	for i, l := range f.lab {
		if l == 0 {
			continue
		}
		sx[l] += float64(i % f.w)
		sy[l] += float64(i / f.w)
		if f.others != nil && f.others[i] {
			known[l]++
		}
	}
	maxD := f.o.Rescue * math.Sqrt(float64(f.keyArea))
	pick, best := 0, math.Inf(1)
	for l := 1; l <= n; l++ {
		a := f.area[l]
		if sel[l] != regionOther || 3*a < f.keyArea || a > 3*f.keyArea || 2*known[l] >= a {
			continue
		}
		d := math.Hypot(sx[l]/float64(a)-at[0], sy[l]/float64(a)-at[1])
		if d <= maxD && d < best {
			pick, best = l, d
		}
	}
	if pick == 0 {
		return false
	}
	sel[pick] = regionObject
	f.rescued = int32(pick)
	if f.tPos <= 0 {
		// The keyframe gave no trust in the network's positives because
		// it saw the object only merged into a larger region; the region
		// rescue picked shows the object alone, so its positives count
		// from here on (rollerblade: J 0.50 with them at 0, 0.58 at 1).
		f.tPos = 1
	}
	return true
}

// remember keeps the object's centroid in the fused matte m and the
// regions of other objects of this network frame, for rescue.
func (f *netFuser) remember(m []float32, sel []regionKind) {
	if f.all {
		return
	}
	if c, ok := Centroid(m, f.w); ok {
		f.last, f.lastOK = c, true
	}
	if f.others == nil {
		f.others = make([]bool, len(m))
	}
	for i, l := range f.lab {
		f.others[i] = l != 0 && sel[l] == regionOther
	}
}

// Centroid is the centroid (x, y) of the pixels of m >= 0.5 (w wide);
// false when there are none.
func Centroid(m []float32, w int) ([2]float64, bool) {
	var sx, sy, k float64
	for i, v := range m {
		if v >= 0.5 {
			sx += float64(i % w)
			sy += float64(i / w)
			k++
		}
	}
	if k == 0 {
		return [2]float64{}, false
	}
	return [2]float64{sx / k, sy / k}, true
}

// snap keeps m soft within band pixels of its 0.5 contour and sets it to
// 0 or 1 beyond, so that faint haze far from the subject cannot leak into
// the composite.
func (f *netFuser) snap(m []float32, band float32) {
	f.distance(m)
	in := slices.Clone(f.dist)
	inv := make([]float32, len(m))
	for i, v := range m {
		inv[i] = 1 - v
	}
	f.distance(inv)
	for i, v := range m {
		// in[i] is the distance to the object, f.dist[i] to the background.
		if v >= 0.5 && f.dist[i] > band {
			m[i] = 1
		} else if v < 0.5 && in[i] > band {
			m[i] = 0
		}
	}
}

// snapper treats each emitted video matte: 0 or 1 at its 0.5 level
// (binary), or snapped to 0 or 1 beyond band flow pixels of its contour.
type snapper struct {
	f      *netFuser // the snap's distance buffers; nil when binary
	band   float32
	binary bool
	level  float32 // Binary's level (NetOptions.BinaryLevel)
}

func newSnapper(w, h int, o NetOptions, band float32, binary bool) snapper {
	s := snapper{band: band, binary: binary, level: o.BinaryLevel}
	if s.level <= 0 {
		s.level = 0.5
	}
	if !binary {
		s.f = newNetFuser(w, h, o)
	}
	return s
}

func (s snapper) apply(v []float32) {
	if s.binary {
		binarize(v, s.level)
		return
	}
	s.f.snap(v, s.band)
}

// binarize sets m to 1 where it is >= level and to 0 elsewhere
// (SelectOptions.Binary).
func binarize(m []float32, level float32) {
	for i, v := range m {
		if v >= level {
			m[i] = 1
		} else {
			m[i] = 0
		}
	}
}

// SnapBand keeps the matte m (w x h) soft within band pixels of its 0.5
// contour and sets it to 0 or 1 beyond: auto's treatment of the network's
// output, exported for stills, whose matte is the network's map at the
// output size.
func SnapBand(m []float32, w, h int, band float32) {
	newNetFuser(w, h, DefaultNetOptions()).snap(m, band)
}
