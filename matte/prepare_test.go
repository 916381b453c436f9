package matte

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/kernels"
)

// diskSource is diskClip as a Source: its frames packed as RGB24. It
// records the size it was opened at and how many frames it gave.
type diskSource struct {
	c            diskClip
	openW, openH int
	given        int
}

func (s *diskSource) Size(context.Context) (int, int, error) { return s.c.w, s.c.h, nil }

func (s *diskSource) Open(_ context.Context, w, h int) (FrameReader, error) {
	s.openW, s.openH, s.given = w, h, 0
	if w != s.c.w || h != s.c.h {
		return nil, fmt.Errorf("opened at %dx%d, the clip is %dx%d", w, h, s.c.w, s.c.h)
	}
	return s, nil
}

func (s *diskSource) Next(ctx context.Context, f *frame.HostFrame) error {
	if s.given == s.c.n {
		return io.EOF
	}
	c := s.c
	img, err := c.dev.NewImage(c.w, c.h, 3)
	if err != nil {
		return err
	}
	defer c.dev.Free(img)
	if err := c.Frame(ctx, s.given, img); err != nil {
		return err
	}
	v, err := c.dev.ReadPixels(img)
	if err != nil {
		return err
	}
	*f = frame.HostFrame{Format: frame.RGB24, Width: c.w, Height: c.h, Planes: [3][]byte{make([]byte, 3*c.w*c.h)}, Strides: [3]int{3 * c.w}}
	n := c.w * c.h
	for p := 0; p < n; p++ {
		for ch := 0; ch < 3; ch++ {
			f.Planes[0][3*p+ch] = uint8(min(max(v[ch*n+p], 0), 1)*255 + 0.5)
		}
	}
	s.given++
	return nil
}

func (s *diskSource) Close() error { return nil }

// redNet is a segmentation network that sees diskClip's disk (its red is
// above 0.5, the background's below) and records the frames it ran on.
type redNet struct {
	src  *diskSource
	runs []int
}

func (n *redNet) Segment(_ context.Context, rgb []float32, w, h int, dst []float32) error {
	n.runs = append(n.runs, n.src.given-1)
	for p := range dst {
		dst[p] = min(max((rgb[p]-0.5)*20+0.5, 0), 1)
	}
	return nil
}

func newDiskSource(dev kernels.Device, frames int) (*diskSource, *redNet) {
	s := &diskSource{c: diskClip{dev: dev, w: 96, h: 64, n: frames, speed: 1.5}}
	return s, &redNet{src: s}
}

// alphas runs Prepared.Alpha on every frame of s and returns the mattes.
func alphas(t *testing.T, dev kernels.Device, m *Prepared, s *diskSource) [][]float32 {
	t.Helper()
	w, h := s.c.w, s.c.h
	src, err := dev.NewImage(w, h, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Free(src)
	dst, err := dev.NewImage(w, h, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Free(dst)
	var out [][]float32
	for i := 0; i < s.c.n; i++ {
		if err := s.c.Frame(context.Background(), i, src); err != nil {
			t.Fatal(err)
		}
		if err := m.Alpha(i, src, dst); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		v, err := dev.ReadPixels(dst)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

func TestPrepareSelect(t *testing.T) {
	dev := kernels.NewCPU(2)
	defer dev.Close()
	src, net := newDiskSource(dev, 10)
	var steps []string
	reads := 0
	o := PrepareOptions{Width: 96, Height: 64, Net: net, Frames: 12,
		Keyframe: &Keyframe{Index: 5, Read: func(_ context.Context, w, h int) ([]float32, error) {
			reads++
			if w != 96 || h != 64 {
				return nil, fmt.Errorf("keyframe read at %dx%d", w, h)
			}
			return src.c.truth(5), nil
		}},
		Progress: func(done, total int) { steps = append(steps, fmt.Sprintf("%d/%d", done, total)) }}
	m, err := Prepare(context.Background(), dev, src, o)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	// Every 4th frame (the default schedule), the keyframe and the last.
	if want := []int{0, 4, 5, 8, 9}; !slices.Equal(net.runs, want) || m.Method != "select" || reads != 2 {
		t.Errorf("network ran on %v, want %v; method %q; keyframe read %d times, want 2", net.runs, want, m.Method, reads)
	}
	// 12 frames expected, 10 read: the total follows the frames read.
	want := "1/24 2/24 3/24 4/24 5/24 6/24 7/24 8/24 9/24 10/24 11/20 12/20 13/20 14/20 15/20 16/20 17/20 18/20 19/20 20/20"
	if got := strings.Join(steps, " "); got != want {
		t.Errorf("progress %s\nwant %s", got, want)
	}
	for i, a := range alphas(t, dev, m, src) {
		if j := iou(a, src.c.truth(i)); j < 0.9 {
			t.Errorf("frame %d: J %.3f, want >= 0.9", i, j)
		}
		if i == 5 && !slices.Equal(a, src.c.truth(5)) {
			t.Errorf("the keyframe's alpha is not the keyframe matte as given")
		}
	}
}

func TestPrepareAuto(t *testing.T) {
	dev := kernels.NewCPU(2)
	defer dev.Close()
	for _, n := range []int{9, 1} { // the last frame on the schedule; a still
		src, net := newDiskSource(dev, n)
		var last string
		m, err := Prepare(context.Background(), dev, src, PrepareOptions{Width: 96, Height: 64, Net: net, Schedule: Schedule{Every: 4}, Frames: n,
			Progress: func(done, total int) { last = fmt.Sprintf("%d/%d", done, total) }})
		if err != nil {
			t.Fatal(err)
		}
		want := []int{0, 4, 8}
		if n == 1 {
			want = []int{0}
		}
		if !slices.Equal(net.runs, want) || m.Method != "auto/net" || last != fmt.Sprintf("%d/%d", 2*n, 2*n) {
			t.Errorf("%d frames: network ran on %v, want %v; method %q; progress ends at %s", n, net.runs, want, m.Method, last)
		}
		for i, a := range alphas(t, dev, m, src) {
			if j := iou(a, src.c.truth(i)); j < 0.9 {
				t.Errorf("%d frames, frame %d: J %.3f, want >= 0.9", n, i, j)
			}
		}
		m.Close()
	}
}

// TestPrepareSelectEvery: a schedule with its own step for select
// (Schedule.SelectEvery, as DefaultGPUSchedule has) runs select's network
// on that step and auto's on Every.
func TestPrepareSelectEvery(t *testing.T) {
	dev := kernels.NewCPU(2)
	defer dev.Close()
	sched := Schedule{Every: 1, SelectEvery: 4}
	src, net := newDiskSource(dev, 9)
	m, err := Prepare(context.Background(), dev, src, PrepareOptions{Width: 96, Height: 64, Net: net, Schedule: sched, Frames: 9,
		Keyframe: &Keyframe{Index: 0, Read: func(context.Context, int, int) ([]float32, error) { return src.c.truth(0), nil }}})
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	if want := []int{0, 4, 8}; !slices.Equal(net.runs, want) {
		t.Errorf("select: network ran on %v, want %v", net.runs, want)
	}
	src, net = newDiskSource(dev, 9)
	m, err = Prepare(context.Background(), dev, src, PrepareOptions{Width: 96, Height: 64, Net: net, Schedule: sched, Frames: 9})
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	if want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8}; !slices.Equal(net.runs, want) {
		t.Errorf("auto: network ran on %v, want %v", net.runs, want)
	}
}

func TestPrepareRefusals(t *testing.T) {
	dev := kernels.NewCPU(2)
	defer dev.Close()
	ctx := context.Background()
	key := func(i int, src *diskSource) *Keyframe {
		return &Keyframe{Index: i, Read: func(context.Context, int, int) ([]float32, error) { return src.c.truth(i), nil }}
	}
	// The keyframe index at its edge: the last frame is taken, one past
	// it is refused.
	src, net := newDiskSource(dev, 6)
	m, err := Prepare(ctx, dev, src, PrepareOptions{Width: 96, Height: 64, Net: net, Keyframe: key(5, src)})
	if err != nil {
		t.Fatalf("keyframe index 5 of 6 frames: %v", err)
	}
	m.Close()
	src, net = newDiskSource(dev, 6)
	_, err = Prepare(ctx, dev, src, PrepareOptions{Width: 96, Height: 64, Net: net, Keyframe: key(6, src)})
	var kr *KeyframeRangeError
	if !errors.As(err, &kr) || *kr != (KeyframeRangeError{Index: 6, Frames: 6}) {
		t.Errorf("keyframe index 6 of 6 frames: err = %v, want a KeyframeRangeError", err)
	}
	src, net = newDiskSource(dev, 0)
	if _, err := Prepare(ctx, dev, src, PrepareOptions{Width: 96, Height: 64, Net: net}); !errors.Is(err, ErrNoFrames) {
		t.Errorf("no frame: err = %v, want ErrNoFrames", err)
	}
	if _, err := Prepare(ctx, dev, src, PrepareOptions{Width: 96, Height: 64}); !errors.Is(err, ErrNoNetwork) {
		t.Errorf("no network: err = %v, want ErrNoNetwork", err)
	}
}

// TestPrepareDecodeSize: frames are read at the network's size, but
// never below the flow size.
func TestPrepareDecodeSize(t *testing.T) {
	dev := kernels.NewCPU(2)
	defer dev.Close()
	for _, c := range []struct{ srcW, srcH, outW, outH, wantW, wantH int }{
		{1024, 576, 1024, 576, 1024, 576},   // the long side at NetLongSide: as it is
		{1026, 578, 1026, 578, 1024, 576},   // just past it: shrunk, even
		{1920, 1080, 1920, 1080, 1024, 576}, // 1080p
		{4000, 200, 4000, 200, 4000, 200},   // the network's size (1024x50) is below the flow size
	} {
		src, net := newDiskSource(dev, 0)
		src.c.w, src.c.h = c.srcW, c.srcH
		_, err := Prepare(context.Background(), dev, src, PrepareOptions{Width: c.outW, Height: c.outH, Net: net})
		if src.openW != c.wantW || src.openH != c.wantH {
			t.Errorf("%dx%d source, %dx%d output: read at %dx%d, want %dx%d (%v)", c.srcW, c.srcH, c.outW, c.outH, src.openW, src.openH, c.wantW, c.wantH, err)
		}
	}
}

// featRedNet is redNet that also gives a feature map: a 4 x 4 grid of 8
// planes, the cell's mean red and its complement, repeated.
type featRedNet struct {
	*redNet
	asked []int
}

func (n *featRedNet) HasFeatures() bool { return true }

func (n *featRedNet) SegmentFeaturePlanes(ctx context.Context, rgb []float32, w, h int, dst []float32) ([]float32, int, int, int, error) {
	if err := n.Segment(ctx, rgb, w, h, dst); err != nil {
		return nil, 0, 0, 0, err
	}
	n.asked = append(n.asked, n.src.given-1)
	const g, c = 4, 8
	data := make([]float32, g*g*c)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			cell := (y*g/h)*g + x*g/w
			for ch := 0; ch < c; ch += 2 {
				data[ch*g*g+cell] += rgb[y*w+x]
				data[(ch+1)*g*g+cell] += 1 - rgb[y*w+x]
			}
		}
	}
	return data, g, g, c, nil
}

// The features readClip keeps are the network frames', and select's
// memory reads them on every network frame but the keyframe when the
// fusion model has memory weights; a clip read without features runs
// select without its memory.
func TestReadClipFeaturesMemory(t *testing.T) {
	dev := kernels.NewCPU(2)
	defer dev.Close()
	ctx := context.Background()
	for _, keep := range []bool{true, false} {
		src, rn := newDiskSource(dev, 10)
		net := &featRedNet{redNet: rn}
		// A select job's schedule, as Prepare gives readClip (every 4th).
		l, err := readClip(ctx, dev, src, 96, 64, net, DefaultCPUSchedule.ForSelect(), 5, clipKeeps{features: keep}, func() {})
		if err != nil {
			t.Fatal(err)
		}
		so := DefaultSelectOptions()
		so.Net.Model = NewFusionModel()
		so.Net.Model.Mem = []float64{0, 1, 0, 1, 0}
		var traced []int
		so.Net.MemTrace = func(tr MemTrace) { traced = append(traced, tr.Frame) }
		key, err := dev.NewImage(96, 64, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := dev.WritePixels(key, src.c.truth(5)); err != nil {
			t.Fatal(err)
		}
		worst := 1.0
		err = Propagate(ctx, dev, l, l, 5, key, so, func(i int, m kernels.Image) error {
			v, err := dev.ReadPixels(m)
			if err != nil {
				return err
			}
			worst = min(worst, iou(v, src.c.truth(i)))
			return nil
		})
		dev.Free(key)
		if err != nil {
			t.Fatalf("features %v: %v", keep, err)
		}
		slices.Sort(traced)
		wantAsked, wantTraced := []int{0, 4, 5, 8, 9}, []int{0, 4, 8, 9}
		if !keep {
			wantAsked, wantTraced = nil, nil
		}
		if !slices.Equal(net.asked, wantAsked) || !slices.Equal(traced, wantTraced) {
			t.Errorf("features %v: kept for frames %v, want %v; memory read on %v, want %v", keep, net.asked, wantAsked, traced, wantTraced)
		}
		if worst < 0.9 {
			t.Errorf("features %v: worst J %.3f, want >= 0.9", keep, worst)
		}
	}
}
