package matte

import (
	"encoding/json"
	"testing"
)

// gateFrame is a frame with an object the carried shape holds (left), a
// part of it the network sees beyond the shape, and another object
// (right) the network sees alone.
func gateFrame(w, h int) (net, shape, prop []float32) {
	net, shape, prop = make([]float32, w*h), make([]float32, w*h), make([]float32, w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i := y*w + x
			net[i], prop[i] = 0.05, 0.1
			switch {
			case x >= 5 && x < 15 && y >= 5 && y < 15:
				net[i], shape[i], prop[i] = 0.95, 1, 0.9
			case x == 15 && y >= 5 && y < 15:
				net[i] = 0.3 // the object's soft rim, below 0.5
			case x >= 25 && x < 35 && y >= 5 && y < 15:
				net[i] = 0.9 // another object
			}
		}
	}
	return net, shape, prop
}

// TestGateChoosesNetworkMap checks that a gate whose weights favour the
// network takes its map on the object's regions (with their soft rim,
// never the other object), that a gate against it keeps the fused matte,
// and that the trace sees both candidates and the features.
func TestGateChoosesNetworkMap(t *testing.T) {
	const w, h = 40, 20
	net, shape, prop := gateFrame(w, h)
	run := func(bias float64) ([]float32, GateTrace) {
		o := HandNetOptions()
		o.Model = NewFusionModel()
		o.Model.Gate = make([]float64, NumGateFeatures)
		o.Model.Gate[gateBias] = bias
		var tr GateTrace
		o.GateTrace = func(g GateTrace) {
			tr = g
			tr.Features = append([]float32(nil), g.Features...)
			tr.Fused = append([]float32(nil), g.Fused...)
			tr.NetSelect = append([]float32(nil), g.NetSelect...)
		}
		f := newNetFuser(w, h, o)
		f.trust, f.tPos = 1, 1
		out := make([]float32, w*h)
		f.fuse(out, prop, shape, net, nil)
		return out, tr
	}
	out, tr := run(1)
	if !tr.Chose {
		t.Fatal("a gate with bias +1 kept the fused matte")
	}
	for i := range out {
		x, y := i%w, i/w
		want := float32(0)
		if x >= 4 && x <= 15 && y >= 4 && y <= 15 {
			want = net[i] // the object's region and the ring of pixels next to it
		}
		if out[i] != want {
			t.Fatalf("pixel (%d,%d): %v, want the network's map on the object only: %v", x, y, out[i], want)
		}
	}
	if got := tr.Features[gateIoU]; got < 0.9 {
		t.Errorf("IoU feature %v: the fused matte and the network's map agree here", got)
	}
	if tr.Features[gateBias] != 1 || tr.Features[gateTPos] != 1 {
		t.Errorf("features %v", tr.Features)
	}
	kept, tr2 := run(-1)
	if tr2.Chose {
		t.Fatal("a gate with bias −1 took the network's map")
	}
	for i := range kept {
		if kept[i] != tr2.Fused[i] {
			t.Fatalf("pixel %d: %v, want the fused %v", i, kept[i], tr2.Fused[i])
		}
	}
}

// TestParseFusionModelGate checks the gate's weights: the right count and
// names parse, a wrong count or renamed features are refused.
func TestParseFusionModelGate(t *testing.T) {
	m := NewFusionModel()
	m.Gate = make([]float64, NumGateFeatures)
	b, _ := json.Marshal(m)
	if _, err := ParseFusionModel(b); err != nil {
		t.Fatalf("a well-formed gate: %v", err)
	}
	short := *m
	short.GateAuto = []float64{1, 2}
	b, _ = json.Marshal(&short)
	if _, err := ParseFusionModel(b); err == nil {
		t.Error("2 auto gate weights: accepted")
	}
	renamed := *m
	renamed.GateNames = append([]string{"x"}, m.GateNames[1:]...)
	b, _ = json.Marshal(&renamed)
	if _, err := ParseFusionModel(b); err == nil {
		t.Error("renamed gate features: accepted")
	}
}

// TestGateColourFeatures checks the image's evidence in the gate: with a
// colour model that calls red the object and blue the background, pixels
// only the fused matte holds score their colour's log-odds in
// colour_fused_only, pixels only the network's map holds in
// colour_net_only, each clamped to ±colourClamp; pixels both hold, or
// neither, count in neither.
func TestGateColourFeatures(t *testing.T) {
	const w, h, bins = 4, 1, 2
	// Planar RGB: pixels 0, 1 red; 2, 3 blue.
	frame := []float32{1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1}
	table := make([]float32, bins*bins*bins)
	for i := range table {
		table[i] = 0.5
	}
	table[(1*bins+0)*bins+0] = 0.9   // red: the object
	table[(0*bins+0)*bins+1] = 0.001 // blue: far below the clamp
	colour := make([]float32, w*h)
	colourEvidence(colour, frame, table, bins)
	if want := logit(0.9); colour[0] != want || colour[1] != want {
		t.Fatalf("red pixels %v, want the log-odds %v", colour[:2], want)
	}
	if colour[2] != -colourClamp || colour[3] != -colourClamp {
		t.Fatalf("blue pixels %v, want the clamp -%v", colour[2:], float32(colourClamp))
	}
	f := newNetFuser(w, h, HandNetOptions())
	var phi [NumGateFeatures]float32
	// Pixel 0 both hold; pixel 1 only the fused matte; pixels 2, 3 only
	// the network's map.
	fused := []float32{1, 0.8, 0, 0.2}
	nsel := []float32{0.9, 0.1, 0.7, 0.6}
	net := nsel
	shape := []float32{1, 1, 0, 0}
	f.gateFeatures(phi[:], fused, nsel, net, shape, colour, 1, 2, 1, 1)
	if got, want := phi[gateColourFused], logit(0.9); got != want {
		t.Errorf("colour_fused_only %v, want %v (pixel 1 alone)", got, want)
	}
	if got := phi[gateColourNet]; got != -colourClamp {
		t.Errorf("colour_net_only %v, want -%v (pixels 2 and 3)", got, float32(colourClamp))
	}
	f.gateFeatures(phi[:], fused, nsel, net, shape, nil, 1, 2, 1, 1)
	if phi[gateColourFused] != 0 || phi[gateColourNet] != 0 {
		t.Errorf("without a colour model: %v, %v, want 0", phi[gateColourFused], phi[gateColourNet])
	}
}
