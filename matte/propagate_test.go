package matte

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/vfxrender/vfx/kernels"
)

// diskClip is a textured disk moving right over a striped background.
type diskClip struct {
	dev   kernels.Device
	w, h  int
	n     int
	speed float64 // pixels a frame
	// jump moves the disk this many more pixels from frame jumpAt on (0:
	// no jump), further than flow can follow.
	jump   float64
	jumpAt int
}

func (c diskClip) Len() int { return c.n }

func (c diskClip) centre(i int) (float64, float64) {
	x := 20 + c.speed*float64(i)
	if c.jump != 0 && i >= c.jumpAt {
		x += c.jump
	}
	return x, 32
}

func (c diskClip) truth(i int) []float32 {
	cx, cy := c.centre(i)
	m := make([]float32, c.w*c.h)
	for y := 0; y < c.h; y++ {
		for x := 0; x < c.w; x++ {
			d := math.Hypot(float64(x)-cx, float64(y)-cy) - 14
			m[y*c.w+x] = float32(math.Max(0, math.Min(1, 0.5-d)))
		}
	}
	return m
}

func (c diskClip) Frame(_ context.Context, i int, dst kernels.Image) error {
	n := c.w * c.h
	v := make([]float32, 3*n)
	a := c.truth(i)
	cx, cy := c.centre(i)
	for y := 0; y < c.h; y++ {
		for x := 0; x < c.w; x++ {
			p := y*c.w + x
			bg := 0.3 + 0.15*math.Sin(float64(x)/4)*math.Cos(float64(y)/5)
			fg := 0.7 + 0.2*math.Sin((float64(x)-cx)/3)*math.Sin((float64(y)-cy)/3)
			al := float64(a[p])
			v[p] = float32(al*fg + (1-al)*bg)
			v[n+p] = float32(al*0.4*fg + (1-al)*(bg+0.1))
			v[2*n+p] = float32(al*0.2 + (1-al)*(bg+0.2))
		}
	}
	return c.dev.WritePixels(dst, v)
}

func iou(m, t []float32) float64 {
	var in, un float64
	for i := range m {
		a, b := m[i] >= 0.5, t[i] >= 0.5
		if a && b {
			in++
		}
		if a || b {
			un++
		}
	}
	return in / un
}

func TestPropagateBothWays(t *testing.T) {
	dev := kernels.NewCPU(2)
	c := diskClip{dev: dev, w: 128, h: 64, n: 12, speed: 3}
	key, _ := dev.NewImage(c.w, c.h, 1)
	const index = 6
	if err := dev.WritePixels(key, c.truth(index)); err != nil {
		t.Fatal(err)
	}
	var order []int
	err := Propagate(context.Background(), dev, c, nil, index, key, DefaultSelectOptions(), func(i int, m kernels.Image) error {
		order = append(order, i)
		v, err := dev.ReadPixels(m)
		if err != nil {
			return err
		}
		if j := iou(v, c.truth(i)); j < 0.9 {
			t.Errorf("frame %d: IoU %.3f", i, j)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []int{6, 7, 8, 9, 10, 11, 5, 4, 3, 2, 1, 0}
	if len(order) != len(want) {
		t.Fatalf("emit order %v, want %v", order, want)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("emit order %v, want %v", order, want)
		}
	}
	if err := Propagate(context.Background(), dev, c, nil, 12, key, DefaultSelectOptions(), nil); !errors.Is(err, ErrKeyframe) {
		t.Errorf("index 12 of 12: err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Propagate(ctx, dev, c, nil, 0, key, DefaultSelectOptions(), func(int, kernels.Image) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v", err)
	}
}

func TestFlowSize(t *testing.T) {
	for _, c := range [][4]int{{1920, 1080, 427, 240}, {854, 480, 427, 240}, {320, 180, 320, 180}, {1080, 1920, 240, 427}, {2560, 1080, 569, 240}} {
		if w, h := FlowSize(c[0], c[1], DefaultFlowShort); w != c[2] || h != c[3] {
			t.Errorf("FlowSize(%d, %d) = %dx%d, want %dx%d", c[0], c[1], w, h, c[2], c[3])
		}
	}
}

// diskNet is a stand-in network over a diskClip: it sees the moving disk
// (when sees) and a decoy disk that never moves, both as objects.
type diskNet struct {
	c          diskClip
	sees       bool
	every, key int
	// mergeKey makes the network see the disk on the keyframe only as
	// part of a larger region (a block it touches), as IS-Net sees a
	// skater against the graffiti behind her.
	mergeKey bool
	// mergeFrom > 0 merges the disk into a larger block from that frame
	// on; decoyX (0: 170) is where the decoy's centre is.
	mergeFrom int
	decoyX    float64
}

func (d diskNet) Objectness(_ context.Context, i int, dst []float32) (bool, error) {
	if !(Schedule{Every: d.every}).Runs(i, d.c.n, d.key) {
		return false, nil
	}
	t := d.c.truth(i)
	for p := range dst {
		x, y := p%d.c.w, p/d.c.w
		dst[p] = 0.02
		if d.sees && t[p] >= 0.5 {
			dst[p] = 0.97
		}
		dx := d.decoyX
		if dx == 0 {
			dx = 170
		}
		if math.Hypot(float64(x)-dx, float64(y)-32) < 16 {
			dst[p] = 0.99
		}
		if d.mergeKey && i == d.key && x < 80 {
			dst[p] = 0.95
		}
		if d.mergeFrom > 0 && i >= d.mergeFrom && x < 60 {
			dst[p] = 0.95
		}
	}
	return true, nil
}

func TestSelectWithNetworkKeepsIdentity(t *testing.T) {
	dev := kernels.NewCPU(2)
	c := diskClip{dev: dev, w: 200, h: 64, n: 12, speed: 3}
	for _, tc := range []struct {
		name    string
		sees    bool
		inverse bool
		floor   float64
	}{
		{"salient", true, false, 0.9},
		// Held by motion alone (the colour models are off with a
		// network): it drifts, but it is never swapped for the decoy.
		{"not seen by the network", false, false, 0.5},
		{"inverse keyframe", true, true, 0.95},
	} {
		t.Run(tc.name, func(t *testing.T) {
			truth := func(i int) []float32 {
				m := c.truth(i)
				if tc.inverse {
					for p := range m {
						m[p] = 1 - m[p]
					}
				}
				return m
			}
			key, _ := dev.NewImage(c.w, c.h, 1)
			defer dev.Free(key)
			const index = 5
			if err := dev.WritePixels(key, truth(index)); err != nil {
				t.Fatal(err)
			}
			net := diskNet{c: c, sees: tc.sees, every: 2, key: index}
			err := Propagate(context.Background(), dev, c, net, index, key, DefaultSelectOptions(), func(i int, m kernels.Image) error {
				v, err := dev.ReadPixels(m)
				if err != nil {
					return err
				}
				if j := iou(v, truth(i)); j < tc.floor {
					t.Errorf("frame %d: IoU %.3f < %.2f", i, j, tc.floor)
				}
				// The decoy is another object: never part of the selection.
				if !tc.inverse && v[32*c.w+170] >= 0.5 {
					t.Errorf("frame %d: the decoy was selected", i)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestAutoNeedsNetwork(t *testing.T) {
	dev := kernels.NewCPU(2)
	c := diskClip{dev: dev, w: 200, h: 64, n: 6, speed: 3}
	if _, err := PlanAuto(context.Background(), dev, c, nil, c.w, c.h, DefaultAutoOptions()); !errors.Is(err, ErrNoNetwork) {
		t.Fatalf("auto without a network: err = %v, want ErrNoNetwork", err)
	}
	net := diskNet{c: c, sees: true, every: 2, key: -1}
	plan, err := PlanAuto(context.Background(), dev, c, net, c.w, c.h, DefaultAutoOptions())
	if err != nil {
		t.Fatal(err)
	}
	if plan.Kind != AutoNet {
		t.Fatalf("kind %v, want net", plan.Kind)
	}
}

// TestAutoMotionCue: auto keeps every object the network sees while none
// moves on its own; once one does, the still ones (the decoy, which the
// network sees on a static background) are dropped from the first frame
// on (the flow to the next frame shows them still).
func TestAutoMotionCue(t *testing.T) {
	dev := kernels.NewCPU(2)
	for _, tc := range []struct {
		name      string
		speed     float64
		decoyFrom int // first frame whose matte must not hold the decoy (-1: never)
	}{
		{"nothing moves", 0, -1},
		{"the disk moves", 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := diskClip{dev: dev, w: 200, h: 64, n: 6, speed: tc.speed}
			net := diskNet{c: c, sees: true, every: 2, key: -1}
			plan, err := PlanAuto(context.Background(), dev, c, net, c.w, c.h, DefaultAutoOptions())
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			if err := plan.Mattes(context.Background(), c, func(i int, m kernels.Image) error {
				v, _ := dev.ReadPixels(m)
				want := c.truth(i)
				decoy := tc.decoyFrom < 0 || i < tc.decoyFrom
				for p := range want {
					if decoy && math.Hypot(float64(p%c.w)-170, float64(p/c.w)-32) < 16 {
						want[p] = 1
					}
				}
				if j := iou(v, want); j < 0.85 {
					t.Errorf("frame %d: IoU %.3f with the disk%s", i, j, map[bool]string{true: " and the decoy", false: " alone"}[decoy])
				}
				// AutoOptions.Binary (the default): 0 or 1 only.
				for p, x := range v {
					if x != 0 && x != 1 {
						t.Errorf("frame %d: alpha %v at (%d,%d), want 0 or 1", i, x, p%c.w, p/c.w)
						break
					}
				}
				n++
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				t.Fatal("no mattes")
			}
		})
	}
}

// TestSelectRescuesLostObject: the disk jumps further than flow can
// follow; the network, which saw it on the keyframe, finds it again on its
// next frame, and the selection goes with it, never to the decoy. Every
// frame is emitted once.
func TestSelectRescuesLostObject(t *testing.T) {
	t.Run("seen alone on the keyframe", func(t *testing.T) { testRescue(t, false) })
	// The network's positives get no trust from such a keyframe, but it
	// saw the object there: the rescue still applies, and the region it
	// picks is trusted from then on.
	t.Run("merged on the keyframe", func(t *testing.T) { testRescue(t, true) })
}

func testRescue(t *testing.T, mergeKey bool) {
	dev := kernels.NewCPU(2)
	c := diskClip{dev: dev, w: 200, h: 64, n: 10, speed: 2, jump: 40, jumpAt: 5}
	key, _ := dev.NewImage(c.w, c.h, 1)
	defer dev.Free(key)
	if err := dev.WritePixels(key, c.truth(0)); err != nil {
		t.Fatal(err)
	}
	seen := map[int]int{}
	net := diskNet{c: c, sees: true, every: 2, key: 0, mergeKey: mergeKey}
	err := Propagate(context.Background(), dev, c, net, 0, key, DefaultSelectOptions(), func(i int, m kernels.Image) error {
		seen[i]++
		v, err := dev.ReadPixels(m)
		if err != nil {
			return err
		}
		// Frame 5 lies between the jump and the network's next frame: its
		// matte is half the carried shape, half the rescued one.
		if j := iou(v, c.truth(i)); i != 5 && j < 0.8 {
			t.Errorf("frame %d: IoU %.3f < 0.8", i, j)
		}
		if v[32*c.w+170] >= 0.5 {
			t.Errorf("frame %d: the decoy was selected", i)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < c.n; i++ {
		if seen[i] != 1 {
			t.Errorf("frame %d emitted %d times, want 1", i, seen[i])
		}
	}
}

// TestSelectNoRescueInsideMergedRegion: from frame 2 the network sees the
// disk only merged into a larger block, and a decoy of the disk's size
// lies near. The merged region still holds the carried shape, so nothing
// was lost: the decoy must never be taken.
func TestSelectNoRescueInsideMergedRegion(t *testing.T) {
	dev := kernels.NewCPU(2)
	c := diskClip{dev: dev, w: 200, h: 64, n: 10, speed: 2}
	key, _ := dev.NewImage(c.w, c.h, 1)
	defer dev.Free(key)
	if err := dev.WritePixels(key, c.truth(0)); err != nil {
		t.Fatal(err)
	}
	net := diskNet{c: c, sees: true, every: 2, key: 0, mergeFrom: 2, decoyX: 82}
	err := Propagate(context.Background(), dev, c, net, 0, key, DefaultSelectOptions(), func(i int, m kernels.Image) error {
		v, err := dev.ReadPixels(m)
		if err != nil {
			return err
		}
		if v[32*c.w+82] >= 0.5 {
			t.Errorf("frame %d: the decoy was taken", i)
		}
		if j := iou(v, c.truth(i)); j < 0.5 {
			t.Errorf("frame %d: IoU %.3f < 0.5", i, j)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// fuseFixture is a fuser of w x h with the hand rules, trusting the
// keyframe (trust 1) and the network's positives by tPos, with empty
// network map, carried shape and propagated matte.
func fuseFixture(w, h int, tPos float64) (f *netFuser, net, shape, prop []float32) {
	f = newNetFuser(w, h, HandNetOptions())
	f.tPos, f.trust = tPos, 1
	return f, make([]float32, w*h), make([]float32, w*h), make([]float32, w*h)
}

// TestFuseMergedRegionHoldsShape: a region of the network's map holds the
// carried shape and much more (merged with something else). Inside the
// shape, where propagation eroded the matte, the network's positives
// restore it; beyond the shape the region gives no evidence, so the matte
// does not grow into what the object is merged with.
func TestFuseMergedRegionHoldsShape(t *testing.T) {
	const w, h = 64, 32
	f, net, shape, prop := fuseFixture(w, h, 1)
	for y := 4; y < 28; y++ {
		for x := 4; x < 60; x++ {
			net[y*w+x] = 0.95 // one region: the object and what it touches
		}
	}
	for y := 10; y < 22; y++ {
		for x := 8; x < 20; x++ {
			shape[y*w+x], prop[y*w+x] = 1, 0.9
		}
	}
	hole := 15*w + 12
	prop[hole] = 0.3 // eroded by propagation inside the shape
	far := 15*w + 50 // in the merged region, far from the shape
	dst := make([]float32, w*h)
	f.fuse(dst, prop, shape, net, nil)
	if sel, _, _ := f.selection(net, shape); len(sel) != 2 || sel[1] != regionMerged {
		t.Fatalf("the region is %v, want merged", sel)
	}
	if dst[hole] < 0.5 {
		t.Errorf("eroded pixel inside the shape: %.3f, want >= 0.5", dst[hole])
	}
	if dst[far] >= 0.5 {
		t.Errorf("merged region beyond the shape: %.3f, want < 0.5", dst[far])
	}
	// Without trust in the network's positives the erosion stands.
	f.tPos = 0
	f.fuse(dst, prop, shape, net, nil)
	if dst[hole] >= 0.5 {
		t.Errorf("untrusted positives restored the pixel: %.3f", dst[hole])
	}
}

// TestFuseObjectRegionTrustedPerFrame: the keyframe gave no trust in the
// network's positives (tPos 0: it saw the subject only merged with its
// surroundings), but on this frame a region lies wholly inside the
// carried shape: its positives count by that share, so a pixel that
// propagation eroded is restored. A region of which under half lies in
// the shape (another object's) still cannot pull the matte into it.
func TestFuseObjectRegionTrustedPerFrame(t *testing.T) {
	const w, h = 64, 32
	f, net, shape, prop := fuseFixture(w, h, 0)
	for y := 8; y < 24; y++ {
		for x := 6; x < 26; x++ {
			shape[y*w+x], prop[y*w+x] = 1, 0.9
			if x >= 8 && x < 24 && y >= 10 && y < 22 {
				net[y*w+x] = 0.95 // the subject's region, inside the shape
			}
		}
		for x := 40; x < 60; x++ {
			net[y*w+x] = 0.95 // another object, apart from the shape
		}
	}
	hole := 15*w + 12
	prop[hole] = 0.3 // eroded by propagation
	other := 15*w + 50
	dst := make([]float32, w*h)
	f.fuse(dst, prop, shape, net, nil)
	sel, _, _ := f.selection(net, shape)
	if len(sel) != 3 || sel[f.lab[hole]] != regionObject || sel[f.lab[other]] != regionOther {
		t.Fatalf("regions %v (subject %d, other %d), want the subject's and another", sel, f.lab[hole], f.lab[other])
	}
	if dst[hole] < 0.5 {
		t.Errorf("eroded pixel in a region inside the shape: %.3f, want >= 0.5 whatever the keyframe's trust", dst[hole])
	}
	if dst[other] >= 0.5 {
		t.Errorf("another object's region: %.3f, want < 0.5", dst[other])
	}
}

// TestFuseErodedShapeGrowsBack: a region of the object twice the carried
// shape's size is trusted only as far as it lies near the shape, so its
// part beyond the shape stays out; when the fused matte was that large on
// an earlier network frame of the sweep (the shape eroded since), the
// region is trusted whole and the part comes back. fuse records the
// sweep's largest fused matte.
func TestFuseErodedShapeGrowsBack(t *testing.T) {
	const w, h = 64, 32
	f, net, shape, prop := fuseFixture(w, h, 1)
	for y := 8; y < 24; y++ {
		for x := 8; x < 48; x++ {
			net[y*w+x] = 0.95 // the object's region: 40x16
			if x < 28 {
				shape[y*w+x], prop[y*w+x] = 1, 0.9 // the eroded shape: 20x16
			}
		}
	}
	part := 15*w + 40 // in the region, beyond the shape's reach
	dst := make([]float32, w*h)
	f.fuse(dst, prop, shape, net, nil)
	if sel, _, _ := f.selection(net, shape); len(sel) != 2 || sel[1] != regionObject {
		t.Fatalf("the region is %v, want the object's", sel)
	}
	if dst[part] >= 0.5 {
		t.Errorf("with no larger matte on the sweep the part beyond the shape is %.3f, want < 0.5", dst[part])
	}
	if f.sweepArea != 20*16 {
		t.Errorf("sweep's largest matte %d pixels, want the fused %d", f.sweepArea, 20*16)
	}
	f.sweepArea = 40*16 - 1 // just under the region: all but fully trusted
	f.fuse(dst, prop, shape, net, nil)
	if dst[part] < 0.5 {
		t.Errorf("with the object as large earlier on the sweep the part is %.3f, want >= 0.5", dst[part])
	}
	if f.sweepArea != 40*16 {
		t.Errorf("sweep's largest matte %d pixels, want the region's %d now fused", f.sweepArea, 40*16)
	}
}

// TestFuseFeaturesRescuedAndMerged: the features a fitted fusion sees
// keep two hand rules. A region the rescue gave the object (away from the
// carried shape) counts as if the shape were there: no distance, wholly
// inside and near. A merged region beyond the shape has no region
// features, as it gives the hand rule no evidence there. The region size
// is taken against the sweep's largest matte when that is larger.
func TestFuseFeaturesRescuedAndMerged(t *testing.T) {
	const w, h = 64, 32
	f, net, shape, prop := fuseFixture(w, h, 1)
	for y := 10; y < 22; y++ {
		for x := 4; x < 14; x++ {
			shape[y*w+x], prop[y*w+x] = 1, 0.9
		}
		for x := 2; x < 40; x++ {
			net[y*w+x] = 0.9 // merged: holds the shape and much else
		}
		for x := 44; x < 56; x++ {
			net[y*w+x] = 0.9 // far from the shape
		}
	}
	sel, reach, area := f.selection(net, shape)
	merged, far := f.lab[15*w+30], f.lab[15*w+50]
	if sel[merged] != regionMerged || sel[far] != regionOther {
		t.Fatalf("regions %v, want merged and other", sel)
	}
	sel[far], f.rescued = regionObject, far // as rescue leaves them
	f.sweepArea = 4 * area
	wr := make([]float32, len(sel))
	wr[far] = 1
	f.features(prop, net, sel, wr, reach, area, 1, 1)
	ln := clampLogit(0.9)
	phi := func(i int) []float32 { return f.phi[i*NumFusionFeatures : (i+1)*NumFusionFeatures] }
	if p := phi(15*w + 50); p[fDist] != 0 || p[fRegIn] != ln || p[fRegNear] != ln {
		t.Errorf("rescued region: dist %.2f, region in %.2f, near %.2f; want 0, %.2f, %.2f", p[fDist], p[fRegIn], p[fRegNear], ln, ln)
	}
	if p := phi(15*w + 30); p[fRegIn] != 0 || p[fRegNear] != 0 || p[fRegSize] != 0 || p[fMergedOutI] != 1 {
		t.Errorf("merged region beyond the shape: region in %.2f, near %.2f, size %.2f, merged_out %.0f; want 0, 0, 0, 1", p[fRegIn], p[fRegNear], p[fRegSize], p[fMergedOutI])
	}
	want := float32(math.Log(float64(f.area[merged]) / float64(4*area)))
	if p := phi(15*w + 8); p[fRegSize] != want {
		t.Errorf("merged region inside the shape: size %.3f, want log(area / sweep's largest matte) %.3f", p[fRegSize], want)
	}
}

// TestSelectBinary: with the network, every emitted matte but the
// keyframe's is 0 or 1 (SelectOptions.Binary, the default) and keeps its
// IoU; with Binary off it keeps a soft band around the contour.
func TestSelectBinary(t *testing.T) {
	dev := kernels.NewCPU(2)
	c := diskClip{dev: dev, w: 200, h: 64, n: 10, speed: 3}
	key, _ := dev.NewImage(c.w, c.h, 1)
	defer dev.Free(key)
	const index = 0
	if err := dev.WritePixels(key, c.truth(index)); err != nil {
		t.Fatal(err)
	}
	net := diskNet{c: c, sees: true, every: 4, key: index}
	soft := func(binary bool) int {
		o := DefaultSelectOptions()
		o.Binary = binary
		n := 0
		err := Propagate(context.Background(), dev, c, net, index, key, o, func(i int, m kernels.Image) error {
			v, err := dev.ReadPixels(m)
			if err != nil {
				return err
			}
			if i == index {
				return nil
			}
			for _, x := range v {
				if x > 0 && x < 1 {
					n++
				}
			}
			if j := iou(v, c.truth(i)); j < 0.85 {
				t.Errorf("binary %v, frame %d: IoU %.3f < 0.85", binary, i, j)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := soft(true); n != 0 {
		t.Errorf("binary: %d soft values in the emitted mattes, want 0", n)
	}
	if n := soft(false); n == 0 {
		t.Error("soft band: no soft values in the emitted mattes (the test does not see the band)")
	}
}
