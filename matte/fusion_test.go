package matte

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDefaultFusionModel checks that the embedded model parses, names this
// build's features and says how it was made.
func TestDefaultFusionModel(t *testing.T) {
	m, err := DefaultFusionModel()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Select)+len(m.Gate)+len(m.GateAuto) > 0 && !strings.HasPrefix(m.FittedBy, "vfx bench matte") {
		t.Errorf("fitted_by %q: want the command that made the file", m.FittedBy)
	}
	if DefaultNetOptions().Model == nil || HandNetOptions().Model != nil {
		t.Error("DefaultNetOptions must carry the model and HandNetOptions none")
	}
}

// TestParseFusionModelRefuses checks that a file for other features, the
// wrong number of weights or a NaN is refused.
func TestParseFusionModelRefuses(t *testing.T) {
	good := NewFusionModel()
	good.Select = make([]float64, NumFusionFeatures)
	b, _ := json.Marshal(good)
	if _, err := ParseFusionModel(b); err != nil {
		t.Fatalf("a well-formed model: %v", err)
	}
	for name, edit := range map[string]func(m *FusionModel){
		"renamed feature": func(m *FusionModel) { m.Features = append([]string{"x"}, m.Features[1:]...) },
		"short weights":   func(m *FusionModel) { m.Select = m.Select[:3] },
		"gap weights":     func(m *FusionModel) { m.Gap = []float64{1} },
		"trees without select weights": func(m *FusionModel) {
			m.Select, m.SelectTrees = nil, Trees{{Depth: 1, Feat: []int32{1}, Thr: []float32{0}, Leaf: []float32{0, 1}}}
		},
		"tree feature out of range": func(m *FusionModel) {
			m.SelectTrees = Trees{{Depth: 1, Feat: []int32{NumFusionFeatures}, Thr: []float32{0}, Leaf: []float32{0, 1}}}
		},
		"tree leaves short": func(m *FusionModel) {
			m.SelectTrees = Trees{{Depth: 2, Feat: []int32{1, 1, 1}, Thr: []float32{0, 0, 0}, Leaf: []float32{0, 1, 2}}}
		},
		"tree too deep": func(m *FusionModel) { m.SelectTrees = Trees{{Depth: MaxTreeDepth + 1}} },
		"tree feature below -1": func(m *FusionModel) {
			m.SelectTrees = Trees{{Depth: 1, Feat: []int32{-2}, Thr: []float32{0}, Leaf: []float32{0, 1}}}
		},
	} {
		m := *good
		m.Select = append([]float64(nil), good.Select...)
		edit(&m)
		b, _ := json.Marshal(&m)
		if _, err := ParseFusionModel(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := ParseFusionModel([]byte(`{"features": [], "select": [NaN]}`)); err == nil {
		t.Error("NaN: accepted")
	}
}

// TestTreesMargin follows a depth-2 tree's paths (right where the
// feature is above the threshold; a node that does not split, feature
// -1, sends everything left) and sums two trees; a model with trees
// parses.
func TestTreesMargin(t *testing.T) {
	tr := Trees{
		{Depth: 2, Feat: []int32{1, 2, -1}, Thr: []float32{0.5, -1, 0}, Leaf: []float32{1, 2, 3, 4}},
		{Depth: 1, Feat: []int32{2}, Thr: []float32{0}, Leaf: []float32{10, 20}},
	}
	for _, c := range []struct {
		x    []float32
		want float64
	}{
		{[]float32{0, 0.5, -2}, 1 + 10}, // left (0.5 is not above), left, x2 <= 0
		{[]float32{0, 0.2, 3}, 2 + 20},  // left, right (3 > -1), x2 > 0
		{[]float32{0, 0.9, 3}, 3 + 20},  // right, then always left
	} {
		if got := tr.Margin(c.x); got != c.want {
			t.Errorf("Margin(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	m := NewFusionModel()
	m.Select = make([]float64, NumFusionFeatures)
	m.SelectTrees = tr
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseFusionModel(b)
	if err != nil {
		t.Fatalf("a model with trees: %v", err)
	}
	if len(got.SelectTrees) != 2 || got.SelectTrees.Margin([]float32{0, 0.9, 3}) != 23 {
		t.Errorf("trees after JSON: %+v", got.SelectTrees)
	}
}

// TestFuseModelMatchesHandRule checks the features against the hand rule:
// with the hand rule's weights the fitted path gives the hand rule's matte
// wherever the rule is a plain sum (inside reach), on a frame with an
// object region, another object and background.
func TestFuseModelMatchesHandRule(t *testing.T) {
	const w, h = 40, 20
	net, shape, prop := fuseInputs(w, h, func(x, y int) (float32, float32, float32) {
		switch {
		case x >= 5 && x < 15 && y >= 5 && y < 15:
			return 0.9, 1, 0.8 // the object
		case x >= 25 && x < 35 && y >= 5 && y < 15:
			return 0.8, 0, 0.3 // another object
		}
		return 0.1, 0, 0.3
	})
	hand := HandNetOptions()
	var got FuseTrace
	hand.Trace = func(t FuseTrace) { got = t; got.Features = append([]float32(nil), t.Features...) }
	f := newNetFuser(w, h, hand)
	f.trust, f.tPos = 1, 1
	want := make([]float32, w*h)
	f.fuse(want, prop, shape, net, nil)
	if len(got.Features) != w*h*NumFusionFeatures {
		t.Fatalf("trace: %d features, want %d", len(got.Features), w*h*NumFusionFeatures)
	}
	m := NewFusionModel()
	m.Select = make([]float64, NumFusionFeatures)
	m.Select[fProp], m.Select[fObjW], m.Select[fMergedInW], m.Select[fOther], m.Select[fNoneW] = 1, 2, 2, -2, 2
	o := HandNetOptions()
	o.Model = m
	g := newNetFuser(w, h, o)
	g.trust, g.tPos = 1, 1
	out := make([]float32, w*h)
	g.fuse(out, prop, shape, net, nil)
	checked := 0
	for i := range out {
		if got.Features[i*NumFusionFeatures+fFar] != 0 {
			continue
		}
		// The hand rule uses the unclamped log-odds; these values are
		// inside the ±6 clamp.
		if d := out[i] - want[i]; d > 1e-4 || d < -1e-4 {
			t.Fatalf("pixel %d: model %.5f, hand rule %.5f", i, out[i], want[i])
		}
		checked++
	}
	if checked < w*h/4 {
		t.Fatalf("only %d pixels within reach", checked)
	}
}

// TestSnapperBinaryLevel: Binary makes a matte 1 at or above its level
// (NetOptions.BinaryLevel, 0.5 when 0) and 0 below it.
func TestSnapperBinaryLevel(t *testing.T) {
	for _, c := range []struct {
		level float32
		want  []float32
	}{
		{0, []float32{0, 0, 1, 1, 1}},
		{0.4, []float32{0, 1, 1, 1, 1}},
		{0.6, []float32{0, 0, 0, 1, 1}},
	} {
		o := DefaultNetOptions()
		o.BinaryLevel = c.level
		m := []float32{0.39, 0.4, 0.5, 0.6, 1}
		newSnapper(5, 1, o, 2, true).apply(m)
		for i := range m {
			if m[i] != c.want[i] {
				t.Errorf("level %v: %v, want %v", c.level, m, c.want)
				break
			}
		}
	}
}

// TestFuseMemRefind: where the carried shape is lost (no region of the
// network's map near it) and the rescue finds nothing, MemRefind takes a
// region away from it whose mean memory P(object) is at least one half;
// not below one half, not with MemRefind off, and not where a region of
// the network's map still holds the shape.
func TestFuseMemRefind(t *testing.T) {
	const w, h = 40, 20
	inB := func(x, y int) bool { return x >= 25 && x < 33 && y >= 6 && y < 14 }
	run := func(refind, held bool, memP float32) float32 {
		net, shape, prop := fuseInputs(w, h, func(x, y int) (float32, float32, float32) {
			switch {
			case inB(x, y): // the object, moved on
				return 0.9, 0, 0
			case x >= 3 && x < 7 && y >= 8 && y < 12: // the carried shape (on a bush)
				if held {
					return 0.9, 1, 0.9
				}
				return 0.1, 1, 0.9
			}
			return 0.1, 0, 0
		})
		o := HandNetOptions()
		o.MemRegions, o.MemRefind = true, refind
		f := newNetFuser(w, h, o)
		f.trust, f.tPos = 1, 1
		f.sweepArea = 64 // the object was as large earlier in the sweep
		f.mem = &memory{}
		f.frame, f.moutFrame = 8, 8
		f.mout = make([]float32, w*h)
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				if inB(x, y) {
					f.mout[y*w+x] = memP
				}
			}
		}
		out := make([]float32, w*h)
		f.fuse(out, prop, shape, net, nil)
		return out[10*w+29]
	}
	for _, c := range []struct {
		refind, held bool
		memP         float32
		taken        bool
	}{
		{true, false, 0.5, true},
		{true, false, 0.49, false},
		{false, false, 0.9, false},
		{true, true, 0.9, false},
	} {
		if got := run(c.refind, c.held, c.memP); (got >= 0.5) != c.taken {
			t.Errorf("refind %v, shape held %v, memory %.2f: the moved object's matte %.3f, want taken %v", c.refind, c.held, c.memP, got, c.taken)
		}
	}
}

// fuseInputs makes the network's map, the carried shape and the carried
// matte of a w x h frame from each pixel's three values.
func fuseInputs(w, h int, at func(x, y int) (net, shape, prop float32)) (net, shape, prop []float32) {
	net, shape, prop = make([]float32, w*h), make([]float32, w*h), make([]float32, w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i := y*w + x
			net[i], shape[i], prop[i] = at(x, y)
		}
	}
	return net, shape, prop
}
