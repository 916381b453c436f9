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
