package matte

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
)

// The fusion's features, per pixel of a frame the network ran on (see
// netFuser.features). ln is the network's log-odds clamped to ±6, lp the
// carried matte's clamped to ±PropClamp; "region" is a connected region of
// the network's map >= 0.5 and its kind (object, merged, other) comes
// from netFuser.selection; wr, tPos and tNeg are the trusts of the hand
// rules. The hand rules are one point of this space: lp + 2·wr·ln (object)
// + 2·tPos·ln (merged, inside the shape) − 2·ln (other) + 2·tNeg·ln
// (no region, within reach), and at most sigmoid(−PropClamp) beyond reach.
const (
	fBias       = iota
	fProp       // lp
	fObjW       // object region: wr·ln
	fObj        // object region: ln
	fObjI       // object region: 1
	fMergedInW  // merged region inside the carried shape: tPos·ln
	fMergedIn   // merged region inside the shape: ln
	fMergedInI  // merged region inside the shape: 1
	fMergedOutI // merged region outside the shape: 1
	fOther      // another object's region: ln
	fOtherI     // another object's region: 1
	fNoneW      // no region, within reach of the shape: tNeg·ln
	fNone       // no region, within reach: ln
	fFar        // no region, beyond reach: 1
	fFarProp    // no region, beyond reach: lp
	fDist       // outside the shape: min(distance / reach, 4); 0 inside and in the region the rescue gave the object
	fPropObj    // object region: lp·wr (how far the carried matte and a trusted region agree)
	fRegIn      // any region but a merged one beyond the shape: (share of the region inside the shape)·ln; ln in the rescued region
	fRegNear    // the same: (share of the region within reach of the shape)·ln; ln in the rescued region
	fRegSize    // the same: log(region area / the larger of the shape's area and the sweep's largest fused matte), clamped to ±3; 0 in the rescued region
	NumFusionFeatures
)

// FusionFeatureNames name the fusion's features in order (the fitted
// file lists them, so that a file made for another order is refused).
var FusionFeatureNames = [NumFusionFeatures]string{
	"bias", "prop", "obj_w", "obj", "obj_i", "merged_in_w", "merged_in", "merged_in_i", "merged_out_i",
	"other", "other_i", "none_w", "none", "far_i", "far_prop", "dist", "prop_obj_w",
	"region_in", "region_near", "region_size",
}

// The gap fill's features, per pixel of a frame between two network
// frames: a and b are the log-odds (clamped to ±6) of the matte carried
// forwards from the earlier network frame and back from the later one, t
// the frame's share of the way to the later one, cf and cb the flow
// confidences of the steps next to the frame on each side.
const (
	gBias = iota
	gFwd  // a
	gBwd  // b
	gFwdT // (1−t)·a
	gBwdT // t·b
	gFwdC // cf·a
	gBwdC // cb·b
	gConf // cf − cb
	NumGapFeatures
)

// GapFeatureNames name the gap fill's features in order.
var GapFeatureNames = [NumGapFeatures]string{"bias", "fwd", "bwd", "fwd_t", "bwd_t", "fwd_conf", "bwd_conf", "conf_diff"}

// FusionModel is a fitted replacement for the hand rules: logistic models
// (weights over the features above, output P(object)) for select's and
// auto's fusion on network frames and for the frames between them. An
// empty weight list keeps the hand rule of that step. The file is made by
// `vfx bench matte --fit` (FittedBy records the exact command) and
// embedded as matte/fusion.json.
type FusionModel struct {
	Version  int       `json:"version"`
	Features []string  `json:"features"`
	Select   []float64 `json:"select,omitempty"`
	Auto     []float64 `json:"auto,omitempty"`
	// SelectTrees, when set, are added to Select's margin (Trees); they
	// are fitted on its residuals, so they go with those weights.
	SelectTrees Trees     `json:"select_trees,omitempty"`
	GapNames    []string  `json:"gap_features"`
	Gap         []float64 `json:"gap,omitempty"`
	// GateNames, Gate and GateAuto: the frame gate (gate.go) of select
	// and of auto; empty keeps the fused matte on every frame.
	GateNames []string  `json:"gate_features,omitempty"`
	Gate      []float64 `json:"gate,omitempty"`
	GateAuto  []float64 `json:"gate_auto,omitempty"`
	// MemNames and Mem: the memory model (memory.go), which turns the
	// network's map and the memory's readouts into P(object) on select's
	// network frames; empty keeps the network's map.
	MemNames []string  `json:"mem_features,omitempty"`
	Mem      []float64 `json:"mem,omitempty"`
	// RegionNames and Region: the region model (NetOptions.MemRegions),
	// which decides how much of each region of the network's map keeps
	// the network's values against the memory model's; empty keeps the
	// region's mean P(object) under the memory model.
	RegionNames []string  `json:"region_features,omitempty"`
	Region      []float64 `json:"region,omitempty"`
	// FittedBy is the command that made the file, Data what it was fitted
	// on and Validation what the held-out fold showed.
	FittedBy   string `json:"fitted_by"`
	Data       string `json:"data"`
	Validation string `json:"validation,omitempty"`
}

//go:embed fusion.json
var fusionJSON []byte

// DefaultFusionModel is the embedded fitted model (matte/fusion.json).
func DefaultFusionModel() (*FusionModel, error) {
	return ParseFusionModel(fusionJSON)
}

// ParseFusionModel reads a fusion model file and checks that its features
// are the ones this build computes, in the same order.
func ParseFusionModel(b []byte) (*FusionModel, error) {
	var m FusionModel
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("matte: fusion model: %w", err)
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	return &m, nil
}

func (m *FusionModel) check() error {
	same := func(a []string, b []string) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	}
	if !same(m.Features, FusionFeatureNames[:]) {
		return fmt.Errorf("matte: fusion model: features %v, this build computes %v", m.Features, FusionFeatureNames)
	}
	if !same(m.GapNames, GapFeatureNames[:]) {
		return fmt.Errorf("matte: fusion model: gap features %v, this build computes %v", m.GapNames, GapFeatureNames)
	}
	for _, w := range [][]float64{m.Select, m.Auto} {
		if len(w) != 0 && len(w) != NumFusionFeatures {
			return fmt.Errorf("matte: fusion model: %d weights for %d features", len(w), NumFusionFeatures)
		}
	}
	if len(m.SelectTrees) > 0 && len(m.Select) == 0 {
		return fmt.Errorf("matte: fusion model: select trees without select weights")
	}
	if err := m.SelectTrees.check(NumFusionFeatures); err != nil {
		return err
	}
	if len(m.Gap) != 0 && len(m.Gap) != NumGapFeatures {
		return fmt.Errorf("matte: fusion model: %d gap weights for %d features", len(m.Gap), NumGapFeatures)
	}
	if len(m.Gate)+len(m.GateAuto) > 0 && !same(m.GateNames, GateFeatureNames[:]) {
		return fmt.Errorf("matte: fusion model: gate features %v, this build computes %v", m.GateNames, GateFeatureNames)
	}
	for _, w := range [][]float64{m.Gate, m.GateAuto} {
		if len(w) != 0 && len(w) != NumGateFeatures {
			return fmt.Errorf("matte: fusion model: %d gate weights for %d features", len(w), NumGateFeatures)
		}
	}
	if len(m.Mem) > 0 && (!same(m.MemNames, MemFeatureNames[:]) || len(m.Mem) != NumMemFeatures) {
		return fmt.Errorf("matte: fusion model: %d memory weights for features %v, this build computes %v", len(m.Mem), m.MemNames, MemFeatureNames)
	}
	if len(m.Region) > 0 && (!same(m.RegionNames, RegionFeatureNames[:]) || len(m.Region) != NumRegionFeatures) {
		return fmt.Errorf("matte: fusion model: %d region weights for features %v, this build computes %v", len(m.Region), m.RegionNames, RegionFeatureNames)
	}
	for _, w := range [][]float64{m.Select, m.Auto, m.Gap, m.Gate, m.GateAuto, m.Mem, m.Region} {
		for _, v := range w {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("matte: fusion model: weight %v", v)
			}
		}
	}
	return nil
}

// NewFusionModel is an empty model (every step keeps its hand rule) with
// this build's feature names, to be filled by a fit.
func NewFusionModel() *FusionModel {
	return &FusionModel{Version: 1, Features: FusionFeatureNames[:], GapNames: GapFeatureNames[:], GateNames: GateFeatureNames[:], MemNames: MemFeatureNames[:], RegionNames: RegionFeatureNames[:]}
}

// FuseTrace is what the fusion saw and made on one frame the network ran
// on (NetOptions.Trace): for fitting and diagnostics.
type FuseTrace struct {
	Frame int
	W, H  int
	// Features holds NumFusionFeatures values per pixel, pixel-major.
	Features []float32
	// NetSelect is the network's own map on the regions the fusion took
	// as the object (0 elsewhere): what the network alone gives for the
	// selected object on this frame.
	NetSelect []float32
	// Out is the fused matte.
	Out []float32
	// Auto is true for auto's fusion (every region is the subject).
	Auto bool
}

// GapTrace is what the gap fill saw on one frame between two network
// frames (NetOptions.GapTrace).
type GapTrace struct {
	Frame int
	W, H  int
	// Features holds NumGapFeatures values per pixel, pixel-major.
	Features []float32
	Auto     bool
}

// dot is the weights' dot product with one pixel's features.
func dot(w []float64, phi []float32) float32 {
	var s float64
	for k, v := range phi {
		s += w[k] * float64(v)
	}
	return float32(s)
}

// clampLogit is logit(p) clamped to ±6: the range the network's 8-bit and
// float maps share (1/255 is −5.5).
func clampLogit(p float32) float32 {
	return min(max(logit(p), -6), 6)
}
