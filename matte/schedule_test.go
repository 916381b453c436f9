package matte

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/vfxrender/vfx/kernels"
)

func countRuns(runs []bool) int {
	k := 0
	for _, r := range runs {
		if r {
			k++
		}
	}
	return k
}

// TestPlanFixed: the zero Motion is the fixed schedule (Runs) whatever
// the changes.
func TestPlanFixed(t *testing.T) {
	for _, n := range []int{1, 2, 5, 17, 40} {
		for _, key := range []int{-1, 0, n / 2, n - 1} {
			ch := make([]float64, n)
			for i := range ch {
				ch[i] = float64(i % 7)
			}
			s := Schedule{Every: 4}
			got := s.Plan(ch, key)
			for i := range got {
				if got[i] != s.Runs(i, n, key) {
					t.Fatalf("n %d key %d: frame %d runs %v, Runs says %v", n, key, i, got[i], !got[i])
				}
			}
		}
	}
}

// TestPlanMotion: the runs go where the change is, never more of them
// than the fixed schedule, always frame 0, the last frame and the
// keyframe; no change, or a non-finite one, gives the fixed schedule.
func TestPlanMotion(t *testing.T) {
	const n = 80
	s := Schedule{Every: 4, Motion: 1}
	fixed := Schedule{Every: 4}
	budget := countRuns(fixed.Plan(make([]float64, n), 37))
	// A still first half, a fast second half.
	ch := make([]float64, n)
	for i := 40; i < n; i++ {
		ch[i] = 1
	}
	ch[0] = 1e9 // ignored
	runs := s.Plan(ch, 37)
	if got := countRuns(runs); got > budget || got < budget-2 {
		t.Fatalf("%d runs, the fixed schedule has %d", got, budget)
	}
	for _, i := range []int{0, 37, n - 1} {
		if !runs[i] {
			t.Fatalf("frame %d does not run: %v", i, runs)
		}
	}
	early := countRuns(runs[1:37])
	late := countRuns(runs[41 : n-1])
	if early != 0 || late < budget-4 {
		t.Fatalf("%d runs in the still half, %d in the moving half (of %d): %v", early, late, budget, runs)
	}
	// Runs evenly spread over the moving half: no gap over twice the mean.
	last, gaps := 40, []int{}
	for i := 41; i < n; i++ {
		if runs[i] {
			gaps = append(gaps, i-last)
			last = i
		}
	}
	for _, g := range gaps {
		if g > 3 {
			t.Fatalf("gap of %d frames in the moving half: %v", g, gaps)
		}
	}
	// Half by motion: the still half keeps runs, fewer than the moving half.
	half := Schedule{Every: 4, Motion: 0.5}.Plan(ch, -1)
	e, l := countRuns(half[1:40]), countRuns(half[40:n-1])
	if e == 0 || e >= l {
		t.Fatalf("Motion 0.5: %d runs in the still half, %d in the moving half", e, l)
	}
	// Uniform change: the runs of the fixed schedule's spacing.
	flat := make([]float64, n)
	for i := range flat {
		flat[i] = 0.3
	}
	runs = s.Plan(flat, -1)
	if got, want := countRuns(runs), countRuns(fixed.Plan(flat, -1)); got != want {
		t.Fatalf("uniform change: %d runs, fixed %d", got, want)
	}
	for i := 0; i < n; i++ {
		if runs[i] {
			continue
		}
		// No two consecutive gaps: every frame within 2 of a run.
		near := false
		for d := -2; d <= 2; d++ {
			if i+d >= 0 && i+d < n && runs[i+d] {
				near = true
			}
		}
		if !near {
			t.Fatalf("uniform change: frame %d is 3 or more from a run: %v", i, runs)
		}
	}
	for _, bad := range [][]float64{make([]float64, n), {0, math.Inf(1), 1, 1, 1, 1}, {0, math.NaN(), 1, 1, 1, 1}} {
		got := s.Plan(bad, -1)
		for i := range got {
			if got[i] != fixed.Runs(i, len(bad), -1) {
				t.Fatalf("change %v: frame %d runs %v, the fixed schedule %v", bad, i, got[i], !got[i])
			}
		}
	}
}

// TestClipChanges: a pan of whole pixels (at the measuring size) counts
// as no change; a moving square on a still background counts; a frozen
// frame counts 0.
func TestClipChanges(t *testing.T) {
	dev := kernels.NewCPU(1)
	defer dev.Close()
	const w, h = 96, 64
	tex := func(x, y int) float32 {
		return float32(0.5 + 0.4*math.Sin(float64(x)*0.37)*math.Cos(float64(y)*0.23))
	}
	make3 := func(f func(x, y int) float32) []float32 {
		p := make([]float32, 3*w*h)
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				v := f(x, y)
				p[y*w+x], p[w*h+y*w+x], p[2*w*h+y*w+x] = v, v, v
			}
		}
		return p
	}
	var frames [][]float32
	// 0-2: a pan of 4 flow pixels (1 at the measuring size) a frame.
	for i := 0; i < 3; i++ {
		frames = append(frames, make3(func(x, y int) float32 { return tex(x+4*i, y) }))
	}
	// 3: frozen (as frame 2).
	frames = append(frames, frames[2])
	// 4: a bright square on frame 2's picture, 5: the square moved 24 px.
	for _, sx := range []int{20, 44} {
		frames = append(frames, make3(func(x, y int) float32 {
			if x >= sx && x < sx+16 && y >= 24 && y < 40 {
				return 1
			}
			return tex(x+8, y)
		}))
	}
	ch, err := ClipChanges(context.Background(), dev, &planarFrames{dev: dev, w: w, h: h, f: frames}, w, h)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch) != len(frames) || ch[0] != 0 {
		t.Fatalf("changes %v", ch)
	}
	for _, i := range []int{1, 2, 3} {
		if ch[i] > 1e-4 {
			t.Fatalf("frame %d (a whole-pixel pan or a frozen frame) changed by %g", i, ch[i])
		}
	}
	if ch[5] < 0.02 {
		t.Fatalf("a moved square changed the frame by only %g", ch[5])
	}
	if ch[4] < 0.01 {
		t.Fatalf("a new square changed the frame by only %g", ch[4])
	}
}

// planarFrames serves planar RGB frames (Frames).
type planarFrames struct {
	dev  kernels.Device
	w, h int
	f    [][]float32
}

func (p *planarFrames) Len() int { return len(p.f) }
func (p *planarFrames) Frame(_ context.Context, i int, dst kernels.Image) error {
	return p.dev.WritePixels(dst, p.f[i])
}

// shortSecondRead is a diskSource that gives fewer frames from its second
// Open on.
type shortSecondRead struct {
	*diskSource
	opens int
}

func (s *shortSecondRead) Open(ctx context.Context, w, h int) (FrameReader, error) {
	s.opens++
	if s.opens == 2 {
		s.c.n -= 3
	}
	return s.diskSource.Open(ctx, w, h)
}

// TestReadClipMotion: with the motion schedule readClip runs the network
// on the planned frames only (around a jump, none on the still frames),
// no more often than the fixed schedule, keeps the same frames as a fixed
// read, counts a step a frame, and refuses a source that gives fewer
// frames on its second read.
func TestReadClipMotion(t *testing.T) {
	dev := kernels.NewCPU(2)
	defer dev.Close()
	ctx := context.Background()
	const n = 20
	newSrc := func() (*diskSource, *redNet) {
		src, net := newDiskSource(dev, n)
		src.c.speed, src.c.jump, src.c.jumpAt = 0, 40, 10
		return src, net
	}
	src, net := newSrc()
	fixed, err := readClip(ctx, dev, src, 96, 64, net, DefaultCPUSchedule, -1, clipKeeps{}, func() {})
	if err != nil {
		t.Fatal(err)
	}
	fixedRuns := len(net.runs)
	src, net = newSrc()
	steps := 0
	s := Schedule{Every: 4, Motion: 1}
	l, err := readClip(ctx, dev, src, 96, 64, net, s, -1, clipKeeps{}, func() { steps++ })
	if err != nil {
		t.Fatal(err)
	}
	if steps != n || l.Len() != n {
		t.Fatalf("%d steps, %d frames, want %d", steps, l.Len(), n)
	}
	for i := range l.frames {
		if !slices.Equal(l.frames[i], fixed.frames[i]) {
			t.Fatalf("frame %d differs from the fixed schedule's read", i)
		}
	}
	ch, err := ClipChanges(ctx, dev, l, 96, 64)
	if err != nil {
		t.Fatal(err)
	}
	plan := s.Plan(ch, -1)
	var want []int
	for i, r := range plan {
		if r {
			want = append(want, i)
		}
	}
	if !slices.Equal(net.runs, want) {
		t.Fatalf("the network ran on %v, the plan is %v (changes %v)", net.runs, want, ch)
	}
	if len(net.runs) > fixedRuns {
		t.Fatalf("%d runs, the fixed schedule %d", len(net.runs), fixedRuns)
	}
	for _, i := range []int{0, 9, 10, n - 1} {
		if _, ok := l.nets[i]; !ok {
			t.Fatalf("no network map of frame %d (ran on %v)", i, net.runs)
		}
	}
	for i := 1; i < 9; i++ {
		if _, ok := l.nets[i]; ok {
			t.Fatalf("the network ran on still frame %d (ran on %v)", i, net.runs)
		}
	}
	ds, net2 := newSrc()
	short := &shortSecondRead{diskSource: ds}
	if _, err := readClip(ctx, dev, short, 96, 64, net2, s, -1, clipKeeps{}, func() {}); err == nil || !strings.Contains(err.Error(), "fewer frames on its second read") {
		t.Fatalf("a shorter second read: %v", err)
	}
}

// TestPlanEveryFrame: with the network on every frame the motion
// schedule changes nothing.
func TestPlanEveryFrame(t *testing.T) {
	ch := []float64{0, 5, 0, 0, 9, 0, 0, 0}
	for _, e := range []int{0, 1} {
		runs := Schedule{Every: e, Motion: 1}.Plan(ch, 3)
		if countRuns(runs) != len(ch) {
			t.Fatalf("Every %d: runs %v", e, runs)
		}
	}
}
