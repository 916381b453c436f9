package matte

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/vfxrender/vfx/internal/resample"
	"github.com/vfxrender/vfx/kernels/rows"
)

// featGrid is a gw x gh feature map of c planes whose cell (x, y) holds
// the vector kind(x, y) (an index into vecs).
func featGrid(gw, gh int, vecs [][]float32, kind func(x, y int) int) FeatureMap {
	c := len(vecs[0])
	f := FeatureMap{W: gw, H: gh, C: c, Data: make([]float32, gw*gh*c)}
	for y := 0; y < gh; y++ {
		for x := 0; x < gw; x++ {
			v := vecs[kind(x, y)]
			for ch := 0; ch < c; ch++ {
				f.Data[ch*gw*gh+y*gw+x] = v[ch]
			}
		}
	}
	return f
}

// A subject (vector 0) on a background (vector 1), remembered with its
// matte, is read back where it moved to; a look-alike of the background
// reads as background; a new look of the subject close to the background
// (vector 2) reads as the subject only once a recent frame showed it as
// the subject, and as before after forget.
func TestMemoryRead(t *testing.T) {
	vecs := [][]float32{
		{1, 0, 0, 0.2},
		{0, 1, 0, 0.2},
		{0, 1, 0.15, 0.2},
		{0, 0.9, 0.1, 0.2},
	}
	const gw, gh, w, h = 8, 6, 64, 48
	key := featGrid(gw, gh, vecs, func(x, y int) int {
		if x >= 1 && x < 3 && y >= 1 && y < 4 {
			return 0
		}
		return 1
	})
	matte := make([]float32, w*h)
	for y := 8; y < 32; y++ {
		for x := 8; x < 24; x++ {
			matte[y*w+x] = 1
		}
	}
	m, err := newMemory(key, matte, w, h)
	if err != nil {
		t.Fatal(err)
	}
	// The subject moved right by 4 cells; a look-alike of the background
	// (vector 3) sits at the top left; a new look (vector 2) at the bottom.
	moved := featGrid(gw, gh, vecs, func(x, y int) int {
		switch {
		case x >= 5 && x < 7 && y >= 1 && y < 4:
			return 0
		case x == 0 && y == 0:
			return 3
		case y == 5 && x < 2:
			return 2
		}
		return 1
	})
	reads := make([][]float32, len(MemTaus))
	for k := range reads {
		reads[k] = make([]float32, w*h)
	}
	if err := m.read(context.Background(), moved, w, h, reads); err != nil {
		t.Fatal(err)
	}
	at := func(k, gx, gy int) float32 { // the read at a cell's centre
		return reads[k][(gy*h/gh+h/gh/2)*w+gx*w/gw+w/gw/2]
	}
	for k := range MemTaus {
		if v := at(k, 5, 2); v < 0.7 {
			t.Errorf("tau %v: the moved subject reads %.3f, want >= 0.7", MemTaus[k], v)
		}
		if v := at(k, 1, 2); v > 0.3 {
			t.Errorf("tau %v: where the subject was reads %.3f, want <= 0.3", MemTaus[k], v)
		}
		if v := at(k, 0, 0); v > 0.3 {
			t.Errorf("tau %v: the background's look-alike reads %.3f, want <= 0.3", MemTaus[k], v)
		}
	}
	sharpNew := at(0, 0, 5)
	// A recent frame shows the new look as the subject.
	recent := featGrid(gw, gh, vecs, func(x, y int) int {
		if y == 5 && x < 2 {
			return 2
		}
		return 1
	})
	rm := make([]float32, w*h)
	for y := 5 * h / gh; y < h; y++ {
		for x := 0; x < 2*w/gw; x++ {
			rm[y*w+x] = 1
		}
	}
	m.remember(recent, rm, w, h)
	if err := m.read(context.Background(), moved, w, h, reads); err != nil {
		t.Fatal(err)
	}
	if sharpNew > 0.3 {
		t.Errorf("the new look before a recent frame showed it: %.3f, want <= 0.3", sharpNew)
	}
	if v := at(0, 0, 5); v < 0.7 {
		t.Errorf("the new look after a recent frame showed it: %.3f (before %.3f), want >= 0.7", v, sharpNew)
	}
	m.forget()
	if err := m.read(context.Background(), moved, w, h, reads); err != nil {
		t.Fatal(err)
	}
	if v := at(0, 0, 5); math.Abs(float64(v-sharpNew)) > 1e-6 {
		t.Errorf("after forget the new look reads %.3f, want %.3f as before", v, sharpNew)
	}
	// A cancelled read stops with the context's error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.read(ctx, moved, w, h, reads); !errors.Is(err, context.Canceled) {
		t.Errorf("a read with a cancelled context: %v, want %v", err, context.Canceled)
	}
	// Shapes that do not match are refused.
	if _, err := newMemory(FeatureMap{W: 2, H: 2, C: 3, Data: make([]float32, 11)}, matte, w, h); err == nil {
		t.Error("a feature map with the wrong number of values was remembered")
	}
	if err := m.read(context.Background(), FeatureMap{W: gw, H: gh, C: 3, Data: make([]float32, gw*gh*3)}, w, h, reads); err == nil {
		t.Error("a read with another number of planes: no error")
	}
}

// readRef is the memory's read as it was written first (session 15): per
// cell rows.Dots against each memory frame, then for each temperature
// math.Exp per remembered cell above the cut. read must give its bits.
func readRef(m *memory, f FeatureMap, w, h int, dst [][]float32) {
	q := m.normalised(f)
	n := f.W * f.H
	grid := make([][]float32, len(MemTaus))
	for k := range grid {
		grid[k] = make([]float32, n)
	}
	mem := []memFrame{m.key}
	if m.last.n > 0 {
		mem = append(mem, m.last)
	}
	total := 0
	for _, fr := range mem {
		total += fr.n
	}
	sim := make([]float32, total)
	vals := make([]float32, 0, total)
	for _, fr := range mem {
		vals = append(vals, fr.vals...)
	}
	c := m.c
	for i := 0; i < n; i++ {
		qi := q[i*c : (i+1)*c]
		j := 0
		for _, fr := range mem {
			rows.Dots(sim[j:j+fr.n], qi, fr.keys)
			j += fr.n
		}
		best := slices.Max(sim)
		for k, tau := range MemTaus {
			var num, den float64
			cut := best - memCut*tau
			for e, s := range sim {
				if s < cut {
					continue
				}
				wt := math.Exp(float64((s - best) / tau))
				num += wt * float64(vals[e])
				den += wt
			}
			grid[k][i] = float32(num / den)
		}
	}
	for k := range MemTaus {
		resample.Bilinear(dst[k], w, h, grid[k], f.W, f.H)
	}
}

// realisticFeatures is a gw x gh x c feature map like a segmentation
// network's deep features: a subject (an ellipse centred at cx, cy, in
// cells) and a background, each a smooth mix of a few non-negative
// prototypes, plus noise, and half the values cut to 0 (a ReLU's).
func realisticFeatures(rng *rand.Rand, gw, gh, c int, protos [][]float32, cx, cy float64) FeatureMap {
	f := FeatureMap{W: gw, H: gh, C: c, Data: make([]float32, gw*gh*c)}
	n := gw * gh
	for y := 0; y < gh; y++ {
		for x := 0; x < gw; x++ {
			dx, dy := (float64(x)-cx)/(0.2*float64(gw)), (float64(y)-cy)/(0.3*float64(gh))
			in := dx*dx+dy*dy < 1
			a := 0.5 + 0.5*math.Sin(float64(x)*0.4+float64(y)*0.25) // a smooth mix of two looks
			p0, p1 := protos[0], protos[1]
			if in {
				p0, p1 = protos[2], protos[3]
			}
			for ch := 0; ch < c; ch++ {
				v := a*float64(p0[ch]) + (1-a)*float64(p1[ch]) + 0.1*rng.NormFloat64()
				f.Data[ch*n+y*gw+x] = float32(max(v, 0))
			}
		}
	}
	return f
}

// read gives the first read's values bit for bit (readRef): on realistic
// feature maps of IS-Net's size (32 x 32 cells of 512 planes) with the
// keyframe alone, with a recent frame, and after forget; and on shapes
// that leave every remainder (cells not a multiple of the blocks of 48 or
// of DotsBlock's 3, planes not a multiple of 8, a recent frame of another
// size), with a cell equal to the keyframe's mean (similar to nothing);
// with one reader (GOMAXPROCS 1) and with more readers than blocks.
func TestMemoryReadSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, sh := range []struct{ gw, gh, c, w, h int }{{32, 32, 512, 480, 270}, {11, 7, 37, 64, 40}, {5, 1, 9, 20, 4}, {1, 1, 8, 3, 3}} {
		t.Run(fmt.Sprintf("%dx%dx%d", sh.gw, sh.gh, sh.c), func(t *testing.T) {
			protos := make([][]float32, 4)
			for i := range protos {
				protos[i] = make([]float32, sh.c)
				for ch := range protos[i] {
					protos[i][ch] = float32(max(rng.NormFloat64(), 0))
				}
			}
			gw, gh, w, h := sh.gw, sh.gh, sh.w, sh.h
			key := realisticFeatures(rng, gw, gh, sh.c, protos, 0.4*float64(gw), 0.5*float64(gh))
			matte := make([]float32, w*h)
			for y := 0; y < h; y++ {
				for x := 0; x < w; x++ {
					dx, dy := (float64(x)/float64(w)-0.4)/0.2, (float64(y)/float64(h)-0.5)/0.3
					matte[y*w+x] = float32(min(max(1.5-dx*dx-dy*dy, 0), 1)) // soft edges
				}
			}
			m, err := newMemory(key, matte, w, h)
			if err != nil {
				t.Fatal(err)
			}
			moved := realisticFeatures(rng, gw, gh, sh.c, protos, 0.55*float64(gw), 0.45*float64(gh))
			for ch := 0; ch < sh.c; ch++ { // cell 0 is the keyframe's mean
				moved.Data[ch*gw*gh] = m.mean[ch]
			}
			same := func(what string) {
				t.Helper()
				got, want := make([][]float32, len(MemTaus)), make([][]float32, len(MemTaus))
				for k := range got {
					got[k], want[k] = make([]float32, w*h), make([]float32, w*h)
				}
				if err := m.read(context.Background(), moved, w, h, got); err != nil {
					t.Fatal(err)
				}
				readRef(m, moved, w, h, want)
				for k := range got {
					for i := range got[k] {
						if math.Float32bits(got[k][i]) != math.Float32bits(want[k][i]) {
							t.Fatalf("%s: tau %v, pixel %d: %v (%#x), the first read's %v (%#x)", what, MemTaus[k], i, got[k][i], math.Float32bits(got[k][i]), want[k][i], math.Float32bits(want[k][i]))
						}
					}
				}
				// Not all 0 or all 1: the reads tell subject from background (on
				// maps of enough cells to hold both).
				lo, hi := slices.Min(got[0]), slices.Max(got[0])
				if gw*gh >= 64 && (lo > 0.3 || hi < 0.7) {
					t.Errorf("%s: the sharp read spans [%.3f, %.3f], want below 0.3 and above 0.7", what, lo, hi)
				}
			}
			same("keyframe")
			// One reader, and more readers than blocks.
			for _, procs := range []int{1, 64} {
				was := runtime.GOMAXPROCS(procs)
				same(fmt.Sprintf("keyframe, GOMAXPROCS %d", procs))
				runtime.GOMAXPROCS(was)
			}
			recent := realisticFeatures(rng, gw, gh, sh.c, protos, 0.5*float64(gw), 0.5*float64(gh))
			m.remember(recent, matte, w, h)
			same("keyframe and recent")
			if gw > 2 {
				other := realisticFeatures(rng, gw-2, gh+1, sh.c, protos, 0.5*float64(gw), 0.5*float64(gh))
				m.remember(other, matte, w, h)
				same("a recent frame of another size")
			}
			m.forget()
			same("after forget")
		})
	}
}

// memNet is an Objectness with features: one map and one feature map
// for every frame.
type memNet struct {
	f     FeatureMap
	asked int
}

func (n *memNet) Objectness(context.Context, int, []float32) (bool, error) { return true, nil }
func (n *memNet) Features(context.Context, int) (FeatureMap, error) {
	n.asked++
	return n.f, nil
}

// halves is a 16 x 16 frame whose left half (feature vector 0) is the
// subject and right half (vector 1) the background: its 4 x 4 feature map
// and its keyframe matte.
func halves() (FeatureMap, []float32) {
	vecs := [][]float32{{1, 0}, {0, 1}}
	const gw, gh, w, h = 4, 4, 16, 16
	f := featGrid(gw, gh, vecs, func(x, y int) int {
		if x < 2 {
			return 0
		}
		return 1
	})
	key := make([]float32, w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w/2; x++ {
			key[y*w+x] = 1
		}
	}
	return f, key
}

// memInto leaves the map as it is without memory weights (the trace still
// sees the reads), and replaces it by the memory model's P(object) with
// them; without a trace or weights, the memory is not made at all.
func TestMemInto(t *testing.T) {
	const w, h = 16, 16
	f, key := halves()
	net := &memNet{f: f}
	ctx := context.Background()
	o := HandNetOptions()
	nf := newNetFuser(w, h, o)
	if err := nf.initMemory(ctx, net, 0, key); err != nil || nf.mem != nil || net.asked != 0 {
		t.Fatalf("no weights, no trace: memory %v, %d feature maps asked (err %v), want none", nf.mem != nil, net.asked, err)
	}
	traced := 0
	o.MemTrace = func(tr MemTrace) {
		traced++
		if len(tr.Reads) != len(MemTaus) || len(tr.Net) != w*h || tr.Frame != 3 {
			t.Errorf("trace: %d reads, %d values, frame %d", len(tr.Reads), len(tr.Net), tr.Frame)
		}
	}
	nf = newNetFuser(w, h, o)
	if err := nf.initMemory(ctx, net, 0, key); err != nil || nf.mem == nil {
		t.Fatalf("with a trace: memory %v, err %v", nf.mem != nil, err)
	}
	nmap := make([]float32, w*h)
	for i := range nmap {
		nmap[i] = 0.5
	}
	if err := nf.memInto(ctx, net, 3, nmap, make([]float32, w*h)); err != nil {
		t.Fatal(err)
	}
	if traced != 1 || nmap[0] != 0.5 || nmap[w-1] != 0.5 {
		t.Errorf("trace only: %d traces, map %v %v, want 1 trace and the map unchanged", traced, nmap[0], nmap[w-1])
	}
	// Weights that follow the sharp read alone, pixel by pixel (the
	// region rule: TestMemRegions).
	o.Model = NewFusionModel()
	o.Model.Mem = make([]float64, NumMemFeatures)
	o.Model.Mem[mRead0] = 1
	o.MemRegions = false
	nf = newNetFuser(w, h, o)
	if err := nf.initMemory(ctx, net, 0, key); err != nil {
		t.Fatal(err)
	}
	if err := nf.memInto(ctx, net, 3, nmap, make([]float32, w*h)); err != nil {
		t.Fatal(err)
	}
	if nmap[0] < 0.9 || nmap[w-1] > 0.1 {
		t.Errorf("with weights: left %.3f, right %.3f, want the subject's side >= 0.9 and the other <= 0.1", nmap[0], nmap[w-1])
	}
	if err := o.Model.check(); err != nil {
		t.Errorf("a model with memory weights: %v", err)
	}
	o.Model.Mem = o.Model.Mem[:2]
	if err := o.Model.check(); err == nil {
		t.Error("a model with 2 memory weights passed its check")
	}
}

// BenchmarkMemoryRead reads a memory of IS-Net's size at 1024 (32 x 32
// cells of 512 planes) at a 480x270 flow size: the keyframe alone
// (frames=1) and the keyframe and a recent frame (frames=2), on a
// periodic map read against itself (the benchmark's first data) and on
// realistic maps (realistic: realisticFeatures, the subject moved).
func BenchmarkMemoryRead(b *testing.B) {
	benchMemoryRead(b, func(m *memory, f FeatureMap, w, h int, dst [][]float32) error {
		return m.read(context.Background(), f, w, h, dst)
	})
}

// BenchmarkMemoryReadFirst is BenchmarkMemoryRead with the first read
// (readRef: one cell at a time, rows.Dots and math.Exp).
func BenchmarkMemoryReadFirst(b *testing.B) {
	benchMemoryRead(b, func(m *memory, f FeatureMap, w, h int, dst [][]float32) error {
		readRef(m, f, w, h, dst)
		return nil
	})
}

func benchMemoryRead(b *testing.B, read func(m *memory, f FeatureMap, w, h int, dst [][]float32) error) {
	const gw, gh, c, w, h = 32, 32, 512, 480, 270
	f := FeatureMap{W: gw, H: gh, C: c, Data: make([]float32, gw*gh*c)}
	for i := range f.Data {
		f.Data[i] = float32((i*7919)%97) / 97
	}
	matte := make([]float32, w*h)
	for i := range matte {
		matte[i] = float32(i % 2)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	protos := make([][]float32, 4)
	for i := range protos {
		protos[i] = make([]float32, c)
		for ch := range protos[i] {
			protos[i][ch] = float32(max(rng.NormFloat64(), 0))
		}
	}
	rKey := realisticFeatures(rng, gw, gh, c, protos, 0.4*gw, 0.5*gh)
	rRecent := realisticFeatures(rng, gw, gh, c, protos, 0.5*gw, 0.5*gh)
	rMoved := realisticFeatures(rng, gw, gh, c, protos, 0.55*gw, 0.45*gh)
	rMatte := make([]float32, w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			dx, dy := (float64(x)/w-0.4)/0.2, (float64(y)/h-0.5)/0.3
			rMatte[y*w+x] = float32(min(max(1.5-dx*dx-dy*dy, 0), 1))
		}
	}
	for _, data := range []string{"", "realistic,"} {
		key, recent, query, km := f, f, f, matte
		if data != "" {
			key, recent, query, km = rKey, rRecent, rMoved, rMatte
		}
		for _, frames := range []int{1, 2} {
			b.Run(fmt.Sprintf("%sframes=%d", data, frames), func(b *testing.B) {
				m, err := newMemory(key, km, w, h)
				if err != nil {
					b.Fatal(err)
				}
				if frames == 2 {
					m.remember(recent, km, w, h)
				}
				reads := make([][]float32, len(MemTaus))
				for k := range reads {
					reads[k] = make([]float32, w*h)
				}
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := cpuTime()
				for i := 0; i < b.N; i++ {
					if err := read(m, query, w, h, reads); err != nil {
						b.Fatal(err)
					}
				}
				// The CPU time of the process (all threads): beside ns/op,
				// which on a loaded machine counts the time others had the
				// cores.
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestMemFar: the distance feature is 0 on the keyframe, grows by
// 1/memFarFrames a frame either way and stops at 1; the model's features
// carry it and its products.
func TestMemFar(t *testing.T) {
	for _, c := range []struct {
		i, key int
		want   float32
	}{
		{10, 10, 0}, {11, 10, 1.0 / memFarFrames}, {9, 10, 1.0 / memFarFrames},
		{memFarFrames - 1, 0, float32(memFarFrames-1) / memFarFrames}, {memFarFrames, 0, 1},
		{memFarFrames + 1, 0, 1}, {0, 500, 1},
	} {
		if got := memFar(c.i, c.key); got != c.want {
			t.Errorf("memFar(%d, %d) = %v, want %v", c.i, c.key, got, c.want)
		}
	}
	reads := [][]float32{{0.5}, {0.9}, {0.5}}
	phi := make([]float32, NumMemFeatures)
	tr := MemTrace{Frame: 45, Key: 0, W: 1, H: 1, Net: []float32{0.1}, Reads: reads}
	tr.Features(phi, 0)
	far := float32(45) / memFarFrames
	if phi[mFar] != far || phi[mReadFar] != phi[mRead0+1]*far || phi[mNetFar] != phi[mNet]*far {
		t.Errorf("features %v: far %v, products of read_mid %v and net %v", phi, far, phi[mRead0+1], phi[mNet])
	}
	if phi[mNet] >= 0 || phi[mRead0+1] <= 0 {
		t.Errorf("log-odds of net 0.1 = %v, of read 0.9 = %v", phi[mNet], phi[mRead0+1])
	}
}

// TestMemRegions: with MemRegions the memory model keeps or vetoes the
// network's regions whole: in a region the model mostly holds the
// network's values weigh as much as the region's mean P(object), so a thin
// part where the coarse readout is low stays the subject; a region it
// mostly rejects (a distractor) takes the model's values.
func TestMemRegions(t *testing.T) {
	const w, h = 16, 16
	f, key := halves()
	// The network's map: the subject (x < 8) with a thin part reaching
	// into the background's cells (x 8-9), a gap (x 10-11), a distractor
	// (x >= 12).
	netMap := func() []float32 {
		m := make([]float32, w*h)
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				if x < 10 || x >= 12 {
					m[y*w+x] = 0.9
				}
			}
		}
		return m
	}
	net := &memNet{f: f}
	ctx := context.Background()
	// The carried matte: the subject's side and the distractor's columns
	// 14-15 (half of it).
	prop := make([]float32, w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if x < 8 || x >= 14 {
				prop[y*w+x] = 1
			}
		}
	}
	var traces []RegionTrace
	runWith := func(regions bool, region []float64) []float32 {
		o := HandNetOptions()
		o.Model = NewFusionModel()
		o.Model.Mem = make([]float64, NumMemFeatures)
		o.Model.Mem[mRead0] = 1
		o.Model.Region = region
		o.MemRegions = regions
		o.RegionTrace = func(tr RegionTrace) {
			tr.Features = append([]float32(nil), tr.Features...)
			tr.Weight = append([]float32(nil), tr.Weight...)
			tr.Labels = append([]int32(nil), tr.Labels...)
			traces = append(traces, tr)
		}
		nf := newNetFuser(w, h, o)
		if err := nf.initMemory(ctx, net, 0, key); err != nil {
			t.Fatal(err)
		}
		nf.frame = 3
		m := netMap()
		if err := nf.memInto(ctx, net, 3, m, prop); err != nil {
			t.Fatal(err)
		}
		return m
	}
	run := func(regions bool) []float32 { return runWith(regions, nil) }
	px, dis, gap := 5*w+9, 5*w+14, 5*w+10
	pixels := run(false)
	if pixels[px] >= 0.5 || pixels[dis] > 0.1 {
		t.Fatalf("per pixel: thin part %.3f, distractor %.3f, want the thin part below 0.5 (the case to mend) and the distractor <= 0.1", pixels[px], pixels[dis])
	}
	regions := run(true)
	if regions[px] < 0.7 {
		t.Errorf("by regions: the subject's thin part %.3f, want >= 0.7 (the network's 0.9 at the region's weight)", regions[px])
	}
	if regions[5*w+2] < 0.9 {
		t.Errorf("by regions: the subject's core %.3f, want >= 0.9", regions[5*w+2])
	}
	if regions[dis] > 0.1 {
		t.Errorf("by regions: the distractor %.3f, want <= 0.1 (vetoed whole)", regions[dis])
	}
	if regions[gap] != pixels[gap] {
		t.Errorf("outside the network's regions: %.3f, want the model's %.3f", regions[gap], pixels[gap])
	}
	// The trace: two regions, the subject's (x < 10: 160 px, 128 inside
	// the carried matte) and the distractor's (x >= 12: 64 px, 32 inside);
	// without region weights each region's weight is its mean under the
	// memory model.
	if len(traces) != 1 || traces[0].N != 2 || traces[0].Frame != 3 {
		t.Fatalf("region traces %d (want 1), regions %d (want 2)", len(traces), traces[0].N)
	}
	tr := traces[0]
	sub, dst := tr.Labels[5*w+2], tr.Labels[dis]
	fs := func(l int32) []float32 { return tr.Features[int(l-1)*NumRegionFeatures : int(l)*NumRegionFeatures] }
	if c := fs(sub)[rCarried]; math.Abs(float64(c)-0.8) > 1e-6 {
		t.Errorf("the subject's carried share %v, want 0.8", c)
	}
	if c := fs(dst)[rCarried]; math.Abs(float64(c)-0.5) > 1e-6 {
		t.Errorf("the distractor's carried share %v, want 0.5", c)
	}
	if sz := fs(dst)[rSize]; math.Abs(float64(sz)-math.Log(64.0/160)) > 1e-5 {
		t.Errorf("the distractor's size feature %v, want log(64/160)", sz)
	}
	if q := tr.Weight[dst]; q > 0.1 || math.Abs(float64(q)-float64(sigmoid(fs(dst)[rMem]))) > 0.01 {
		t.Errorf("the distractor's weight %v, want its mean under the model, sigmoid(%v)", q, fs(dst)[rMem])
	}
	// Fitted region weights that follow the carried matte: the
	// distractor, half inside it, keeps the network's values (weight
	// sigmoid(0)); a model with a wrong count of region weights is refused.
	rw := make([]float64, NumRegionFeatures)
	rw[rBias], rw[rCarried] = -4, 8
	kept := runWith(true, rw)
	if kept[dis] < 0.44 || kept[dis] > 0.46 {
		t.Errorf("with region weights: the distractor %.3f, want 0.5 x 0.9 (weight sigmoid(0) = 0.5)", kept[dis])
	}
	if kept[5*w+9] < 0.8 {
		t.Errorf("with region weights: the subject's thin part %.3f, want >= 0.8", kept[5*w+9])
	}
	m := NewFusionModel()
	if m.Region = rw[:3]; m.check() == nil {
		t.Error("a model with 3 region weights passed its check")
	}
	if m.Region = rw; m.check() != nil {
		t.Errorf("a model with region weights: %v", m.check())
	}
}

// TestMemoryBytes: with memory weights shipped, the plan counts one
// feature map a network frame (the schedule's, the last and the keyframe).
func TestMemoryBytes(t *testing.T) {
	if !MemoryShipped() {
		t.Skip("no memory weights in the embedded fusion model")
	}
	if got, want := MemoryBytes(240, Schedule{Every: 4}), int64(62*memFeatureBytes); got != want {
		t.Errorf("240 frames every 4th: %d bytes, want %d", got, want)
	}
	if got, want := MemoryBytes(240, Schedule{}), int64(62*memFeatureBytes); got != want {
		t.Errorf("240 frames, zero schedule (the CPU default): %d bytes, want %d", got, want)
	}
	if got, want := MemoryBytes(10, Schedule{Every: 1}), int64(12*memFeatureBytes); got != want {
		t.Errorf("10 frames, every frame: %d bytes, want %d", got, want)
	}
	// The memory is select's: a schedule with its own step for select
	// counts that step's frames.
	if got, want := MemoryBytes(240, Schedule{Every: 1, SelectEvery: 4}), int64(62*memFeatureBytes); got != want {
		t.Errorf("240 frames, auto every frame, select every 4th: %d bytes, want %d", got, want)
	}
	if got := MemoryBytes(0, Schedule{Every: 4}); got != 0 {
		t.Errorf("no frames: %d bytes", got)
	}
}
