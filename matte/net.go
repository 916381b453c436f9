package matte

import (
	"context"
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
// from frame 0, the last frame and the keyframe. Every 1 runs it on all.
type Schedule struct {
	Every int
}

// DefaultCPUSchedule is the network every 4th frame with propagation
// between (see the README's schedule table); DefaultGPUSchedule runs it
// on every frame.
var (
	DefaultCPUSchedule = Schedule{Every: 4}
	DefaultGPUSchedule = Schedule{Every: 1}
)

// Runs reports whether the network runs on frame i of n with keyframe key
// (key < 0: none).
func (s Schedule) Runs(i, n, key int) bool {
	k := max(s.Every, 1)
	return i%k == 0 || i == n-1 || i == key
}

// NetOptions tune how the network's map is fused with propagation.
type NetOptions struct {
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
}

// DefaultNetOptions are the defaults: IoU 0.5 is where the network starts
// to count (the detection convention) and full trust from 0.8.
func DefaultNetOptions() NetOptions {
	return NetOptions{Gain: 2, PropClamp: 4, TrustLow: 0.5, TrustHigh: 0.8, Reach: 0.15}
}

// netFuser holds the per-clip state of the fusion.
type netFuser struct {
	o     NetOptions
	w, h  int
	trust float64 // from the keyframe; <0 before it is set
	all   bool    // auto: every region of the network is the subject
	lab   []int32
	area  []int
	ovIn  []int
	ovDil []int
	dist  []float32
	queue []int32
}

func newNetFuser(w, h int, o NetOptions) *netFuser {
	return &netFuser{o: o, w: w, h: h, trust: -1, lab: make([]int32, w*h), dist: make([]float32, w*h)}
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
// regions explain the keyframe matte and sets the trust in the network.
func (f *netFuser) setTrust(net, key []float32) {
	if f.all {
		f.trust = 1
		return
	}
	sel, _, _ := f.selection(net, key)
	var in, un int
	for i, l := range f.lab {
		p := l != 0 && sel[l] == regionObject
		g := key[i] >= 0.5
		if p && g {
			in++
		}
		if p || g {
			un++
		}
	}
	iou := 1.0
	if un > 0 {
		iou = float64(in) / float64(un)
	}
	f.trust = min(max((iou-f.o.TrustLow)/(f.o.TrustHigh-f.o.TrustLow), 0), 1)
}

// fuse combines the propagated matte prop (soft) with the network's map
// net into dst, with shape (the previous matte warped to this frame)
// deciding what each of the network's regions is to the object.
//
// Per pixel, in log-odds: the propagated matte (clamped), plus the
// network's evidence times Gain times a weight. In a region of the object
// the evidence is the network's P(object), weighted by the trust, however
// far the object moved; outside every region it is the same P
// (background), same weight, and beyond reach of the shape the object
// cannot be. In a region of another object the evidence is 1-P with weight
// 1 whatever the trust, so that the matte never leaks into another salient
// object and never swaps to it. A region merged with something else gives
// no evidence. The trust of a frame falls with the share of the shape the
// network still covers, so that where the network loses the object,
// propagation holds it.
func (f *netFuser) fuse(dst, prop, shape, net []float32) {
	sel, reach, shapeArea := f.selection(net, shape)
	trust := f.trust
	if !f.all && shapeArea > 0 {
		cov := 0
		for i, l := range f.lab {
			if l != 0 && sel[l] == regionObject && f.dist[i] <= reach {
				cov++
			}
		}
		c := float64(cov) / float64(shapeArea)
		trust *= min(max((c-0.3)/0.4, 0), 1)
	}
	g, pc := f.o.Gain, f.o.PropClamp
	for i := range dst {
		lp := min(max(logit(prop[i]), -pc), pc)
		l := f.lab[i]
		switch {
		case l != 0 && sel[l] == regionObject:
			lp += g * float32(trust) * logit(net[i])
		case l != 0 && sel[l] == regionMerged:
		case l != 0:
			lp += g * logit(1-net[i])
		case !f.all && f.dist[i] > reach:
			dst[i] = min(prop[i], sigmoid(-pc))
			continue
		default:
			lp += g * float32(trust) * logit(net[i])
		}
		dst[i] = sigmoid(lp)
	}
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

// SnapBand keeps the matte m (w x h) soft within band pixels of its 0.5
// contour and sets it to 0 or 1 beyond: auto's treatment of the network's
// output, exported for stills, whose matte is the network's map at the
// output size.
func SnapBand(m []float32, w, h int, band float32) {
	newNetFuser(w, h, DefaultNetOptions()).snap(m, band)
}
