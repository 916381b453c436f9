package matte

import (
	"math"

	"github.com/vfxrender/vfx/kernels"
)

// The frame gate decides, on each frame the network ran on, whether the
// fused matte or the network's own map on the object's regions (what the
// bench calls net-select) is emitted and carried on. Its features
// describe the whole frame: how far the two candidates agree and how much
// the network's regions explain the carried shape. A fitted logistic
// model over them (FusionModel.Gate, FusionModel.GateAuto) gives P(the
// network's map is the better matte); the network's map is taken where P
// > 0.5. Without weights the fused matte is kept (the hand rules).
const (
	gateBias     = iota
	gateIoU      // IoU of the fused matte and the network's map (both at 0.5)
	gateArea     // log(area of the network's map / area of the fused matte), clamped to ±3
	gateTPos     // the trust in the network's positives (from the keyframe)
	gateTNeg     // the trust in its negatives on this frame (the regions' recall of the shape)
	gateNetOut   // share of the network's map outside the carried shape
	gateShapeCov // share of the carried shape the network's map covers
	gateNetSoft  // the network's softness on its object regions: mean 4p(1−p) over them
	gateRescued  // 1 when rescue gave the object a region on this frame
	gateFusedOut // share of the fused matte outside the carried shape
	gateSize     // sqrt(shape area / frame area)
	gateRegions  // log(1 + object regions)
	// The image's evidence where the two candidates differ: the mean
	// log-odds of the keyframe's colour model, P(object | colour) (the
	// table the propagator learned from the keyframe and its matte),
	// clamped to ±colourClamp, over the pixels only the fused matte holds
	// and over those only the network's map holds (0 where there are
	// none). Where the carried shape holds what the network missed, its
	// colours are the object's; where it drifted onto the background,
	// they are not.
	gateColourFused
	gateColourNet
	NumGateFeatures
)

// GateFeatureNames name the gate's features in order.
var GateFeatureNames = [NumGateFeatures]string{
	"bias", "iou", "area_ratio", "trust_pos", "trust_neg", "net_outside", "shape_covered",
	"net_soft", "rescued", "fused_outside", "size", "regions", "colour_fused_only", "colour_net_only",
}

// colourClamp bounds the colour model's log-odds per pixel (P between
// 0.018 and 0.982): one pixel of a colour the keyframe never showed
// cannot outweigh the rest.
const colourClamp = 4

// GateTrace is what the gate saw on one frame the network ran on
// (NetOptions.GateTrace): its features and both candidates.
type GateTrace struct {
	Frame    int
	W, H     int
	Features []float32
	// Fused is the fusion's matte, NetSelect the network's own map on the
	// object's regions; Chose is true when the gate took NetSelect.
	Fused, NetSelect []float32
	Chose            bool
	Auto             bool
}

// netSelect writes the network's map on the object's regions into dst:
// the map itself inside them and on the pixels next to them (so that the
// soft rim below 0.5 stays soft), 0 elsewhere. It returns the number of
// object regions.
func (f *netFuser) netSelect(dst, net []float32, sel []regionKind) int {
	regions := 0
	for l := 1; l < len(sel); l++ {
		if sel[l] == regionObject {
			regions++
		}
	}
	w, h := f.w, f.h
	obj := func(i int) bool { l := f.lab[i]; return l != 0 && sel[l] == regionObject }
	for i := range dst {
		dst[i] = 0
		if obj(i) {
			dst[i] = net[i]
			continue
		}
		if f.lab[i] != 0 {
			continue // another region's pixel: never the object's rim
		}
		x, y := i%w, i/w
		for dy := -1; dy <= 1; dy++ {
			for dx := -1; dx <= 1; dx++ {
				xx, yy := x+dx, y+dy
				if xx >= 0 && yy >= 0 && xx < w && yy < h && obj(yy*w+xx) {
					dst[i] = net[i]
				}
			}
		}
	}
	return regions
}

// gateFeatures fills phi (NumGateFeatures) for the fused matte fused and
// the network's object map nsel with the carried shape.
// colour (may be nil: no colour model) is the colour model's log-odds per
// pixel.
func (f *netFuser) gateFeatures(phi, fused, nsel, net, shape, colour []float32, regions, shapeArea int, tPos, tNeg float64) {
	var inter, union, aN, aF, nOut, fOut, cov int
	var soft float64
	var softN int
	var cF, cN float64
	var nF, nN int
	for i := range fused {
		n, d, s := nsel[i] >= 0.5, fused[i] >= 0.5, shape[i] >= 0.5
		if colour != nil && n != d {
			if d {
				cF += float64(colour[i])
				nF++
			} else {
				cN += float64(colour[i])
				nN++
			}
		}
		if n && d {
			inter++
		}
		if n || d {
			union++
		}
		if n {
			aN++
			if !s {
				nOut++
			} else {
				cov++
			}
			p := float64(net[i])
			soft += 4 * p * (1 - p)
			softN++
		}
		if d {
			aF++
			if !s {
				fOut++
			}
		}
	}
	share := func(a, b int) float32 {
		if b == 0 {
			return 0
		}
		return float32(a) / float32(b)
	}
	for k := range phi {
		phi[k] = 0
	}
	phi[gateBias] = 1
	phi[gateIoU] = 1
	if union > 0 {
		phi[gateIoU] = float32(inter) / float32(union)
	}
	phi[gateArea] = float32(min(max(math.Log(float64(aN+1)/float64(aF+1)), -3), 3))
	phi[gateTPos], phi[gateTNeg] = float32(tPos), float32(tNeg)
	phi[gateNetOut] = share(nOut, aN)
	phi[gateShapeCov] = share(cov, shapeArea)
	if softN > 0 {
		phi[gateNetSoft] = float32(soft / float64(softN))
	}
	if f.rescued != 0 {
		phi[gateRescued] = 1
	}
	phi[gateFusedOut] = share(fOut, aF)
	phi[gateSize] = float32(math.Sqrt(float64(shapeArea) / float64(len(fused))))
	phi[gateRegions] = float32(math.Log1p(float64(regions)))
	if nF > 0 {
		phi[gateColourFused] = float32(cF / float64(nF))
	}
	if nN > 0 {
		phi[gateColourNet] = float32(cN / float64(nN))
	}
}

// colourEvidence writes into dst the colour model's log-odds (clamped to
// ±colourClamp) of every pixel of frame (planar RGB in [0,1], w*h per
// plane) under table (P(object | cell), bins per channel).
func colourEvidence(dst, frame, table []float32, bins int) {
	n := len(dst)
	r, g, b := frame[:n], frame[n:2*n], frame[2*n:3*n]
	for i := range dst {
		l := logit(table[kernels.ColourCell(r[i], g[i], b[i], bins)])
		dst[i] = min(max(l, -colourClamp), colourClamp)
	}
}

// gateWeights are the gate's weights for this mode (nil: none).
func (f *netFuser) gateWeights() []float64 {
	m := f.o.Model
	if m == nil {
		return nil
	}
	if f.all {
		return m.GateAuto
	}
	return m.Gate
}

// wantsColour reports whether the gate needs the colour model's evidence:
// a trace records every feature; weights need it only when either colour
// weight is nonzero (the shipped gates have none: see fusion.json).
func (f *netFuser) wantsColour() bool {
	if f.o.GateTrace != nil {
		return true
	}
	w := f.gateWeights()
	return len(w) == NumGateFeatures && (w[gateColourFused] != 0 || w[gateColourNet] != 0)
}

// gate decides between the fused matte dst and the network's object map
// (see the constants above) and writes the choice into dst. It runs only
// when the model has gate weights for this mode or a gate trace is set.
func (f *netFuser) gate(dst, net, shape []float32, sel []regionKind, shapeArea int, tPos, tNeg float64) {
	w := f.gateWeights()
	if len(w) == 0 && f.o.GateTrace == nil {
		return
	}
	if len(f.nsel) != len(net) {
		f.nsel = make([]float32, len(net))
	}
	regions := f.netSelect(f.nsel, net, sel)
	var phi [NumGateFeatures]float32
	f.gateFeatures(phi[:], dst, f.nsel, net, shape, f.colour, regions, shapeArea, tPos, tNeg)
	chose := len(w) > 0 && regions > 0 && dot(w, phi[:]) > 0
	if f.o.GateTrace != nil {
		f.o.GateTrace(GateTrace{Frame: f.frame, W: f.w, H: f.h, Features: phi[:], Fused: dst, NetSelect: f.nsel, Chose: chose, Auto: f.all})
	}
	if chose {
		copy(dst, f.nsel)
	}
}
