package matte

import "math"

// The region model's features (NetOptions.MemRegions), one row per
// 4-connected region of the network's map >= 0.5 on a frame select's
// network ran on: what the memory model, the network and the matte
// carried by motion each say about the region. The model's output is
// the weight the region's network values get against the memory model's
// (memRegions); without fitted weights that weight is the region's mean
// P(object) under the memory model (rMem's probability).
const (
	rBias       = iota
	rMem        // clamped log-odds of the region's mean P(object) under the memory model
	rNet        // clamped log-odds of the region's mean network value
	rCarried    // share of the region where the carried matte is >= 0.5
	rSize       // log(region area / carried matte's area), clamped to ±3
	rFar        // the frame's distance to the keyframe (memFar)
	rMemCarried // rMem·rCarried
	NumRegionFeatures
)

// RegionFeatureNames name the region model's features in order.
var RegionFeatureNames = [NumRegionFeatures]string{"bias", "mem", "net", "carried", "size", "far", "mem_carried"}

// RegionTrace is what the region model saw on one frame the network ran on
// (NetOptions.RegionTrace): Labels marks each flow-size pixel with its
// region (0 = none, 1..N), Features holds NumRegionFeatures values per
// region (region k at (k-1)·NumRegionFeatures), Weight each region's
// weight for its network values as applied. The slices are reused after
// the call returns.
type RegionTrace struct {
	Frame    int
	W, H     int
	N        int
	Labels   []int32
	Features []float32
	Weight   []float32
}

// memRegions applies the memory model (weights wt, distance feature far)
// to nmap region by region (NetOptions.MemRegions): in each 4-connected
// region of nmap >= 0.5, with weight q, a pixel is q x the larger of the
// network's value and the model's, plus (1 - q) x the model's; outside
// every region the model's values. q is the region's mean P(object) m
// under the memory model, or, with fitted region weights
// (FusionModel.Region), the region model's output over the region's
// features (m, the network's mean, its share inside the matte prop
// carried by motion, its size against that matte's). So the coarse
// readout (a cell of IS-Net's stage 5 is 1/32 of the frame) vetoes a
// whole distractor and keeps a subject region it holds whole, but a
// region it half recognises (m 0.3-0.5 on a fast, blurred subject) is
// thinned wherever the model's own value is low. No region weights ship:
// such a region is mostly a subject merged with its surroundings (on
// rollerblade's network frames 11-52% of it is the skater), which no
// whole-region weight can mend (docs/mattes.md).
func (f *netFuser) memRegions(nmap, prop []float32, wt []float64, far float32) {
	n := f.label(nmap)
	if cap(f.mout) < len(nmap) {
		f.mout = make([]float32, len(nmap))
	}
	out := f.mout[:len(nmap)]
	f.moutFrame = f.frame
	f.msum = append(f.msum[:0], make([]float64, n+1)...)
	f.nsum = append(f.nsum[:0], make([]float64, n+1)...)
	f.csum = append(f.csum[:0], make([]int, n+1)...)
	carried := 0
	for p, v := range nmap {
		memFeatures(f.mphi, v, f.reads, far, p)
		out[p] = sigmoid(dot(wt, f.mphi))
		l := f.lab[p]
		f.msum[l] += float64(out[p])
		f.nsum[l] += float64(v)
		if prop[p] >= 0.5 {
			carried++
			f.csum[l]++
		}
	}
	var rw []float64
	if m := f.o.Model; m != nil && len(m.Region) == NumRegionFeatures {
		rw = m.Region
	}
	const d = NumRegionFeatures
	f.rphi = append(f.rphi[:0], make([]float32, n*d+n+1)...)
	phi, q := f.rphi[:n*d], f.rphi[n*d:]
	for l := 1; l <= n; l++ {
		a := float64(f.area[l])
		m := float32(f.msum[l] / a)
		x := phi[(l-1)*d : l*d]
		x[rBias] = 1
		x[rMem] = clampLogit(m)
		x[rNet] = clampLogit(float32(f.nsum[l] / a))
		x[rCarried] = float32(float64(f.csum[l]) / a)
		x[rSize] = float32(min(max(math.Log(a/float64(max(carried, 1))), -3), 3))
		x[rFar] = far
		x[rMemCarried] = x[rMem] * x[rCarried]
		q[l] = m
		if rw != nil {
			q[l] = sigmoid(dot(rw, x))
		}
	}
	if f.o.RegionTrace != nil {
		f.o.RegionTrace(RegionTrace{Frame: f.frame, W: f.w, H: f.h, N: n, Labels: f.lab, Features: phi, Weight: q})
	}
	for p, v := range nmap {
		if l := f.lab[p]; l != 0 {
			nmap[p] = q[l]*max(v, out[p]) + (1-q[l])*out[p]
		} else {
			nmap[p] = out[p]
		}
	}
}
