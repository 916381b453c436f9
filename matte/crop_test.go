package matte

import (
	"context"
	"slices"
	"testing"

	"github.com/vfxrender/vfx/kernels"
)

// rect is a w x h mask with the pixels [x0,x1) x [y0,y1) set, less the
// first drop of them.
func rect(w, h, x0, y0, x1, y1, drop int) []float32 {
	m := make([]float32, w*h)
	for y := y0; y < y1; y++ {
		for x := x0; x < x1; x++ {
			if drop > 0 {
				drop--
				continue
			}
			m[y*w+x] = 1
		}
	}
	return m
}

func TestCropBox(t *testing.T) {
	const w, h = 100, 100 // 2% of the frame is 200 pixels
	for _, tc := range []struct {
		name  string
		shape []float32
		area  float64
		want  Box
		ok    bool
	}{
		// A 10x10 square (1%): a box twice its side, centred on it.
		{"small", rect(w, h, 40, 30, 50, 40, 0), 0.02, Box{35, 25, 55, 45}, true},
		// The edge of the 2% limit: 199 pixels runs, 200 does not.
		{"just under", rect(w, h, 40, 30, 60, 40, 1), 0.02, Box{30, 15, 70, 55}, true},
		{"at the limit", rect(w, h, 40, 30, 60, 40, 0), 0.02, Box{}, false},
		{"large", rect(w, h, 20, 20, 70, 70, 0), 0.02, Box{}, false},
		{"empty", rect(w, h, 0, 0, 0, 0, 0), 0.02, Box{}, false},
		{"off", rect(w, h, 40, 30, 50, 40, 0), 0, Box{}, false},
		// In a corner the box is moved inside the frame.
		{"corner", rect(w, h, 95, 96, 100, 100, 0), 0.02, Box{88, 88, 100, 100}, true},
		// A 2-pixel shape: at least an eighth of the short side (12).
		{"tiny", rect(w, h, 50, 50, 52, 51, 0), 0.02, Box{45, 44, 57, 56}, true},
	} {
		b, ok := cropBox(tc.shape, w, h, tc.area, DefaultCropMargin)
		if b != tc.want || ok != tc.ok {
			t.Errorf("%s: box %+v %v, want %+v %v", tc.name, b, ok, tc.want, tc.ok)
		}
		if ok && b.W() != b.H() {
			t.Errorf("%s: box %+v is not square", tc.name, b)
		}
	}
	// The box's edge: half the frame's short side (20 of 400x40) is
	// taken, one pixel more is not (a small area spread wide).
	b, ok := cropBox(rect(400, 40, 100, 10, 110, 20, 0), 400, 40, 0.1, DefaultCropMargin)
	if !ok || b != (Box{95, 5, 115, 25}) {
		t.Errorf("a box of half the short side: %+v %v, want {95 5 115 25} true", b, ok)
	}
	if b, ok := cropBox(rect(400, 40, 100, 10, 111, 21, 0), 400, 40, 0.1, DefaultCropMargin); ok {
		t.Errorf("a box of 22 in a frame 40 high: %+v, want none", b)
	}
	// Two specks far apart: a small area, a wide box, no crop.
	specks := rect(w, h, 10, 10, 12, 12, 0)
	specks[80*w+80] = 1
	if b, ok := cropBox(specks, w, h, 0.02, DefaultCropMargin); ok {
		t.Errorf("two specks 70 pixels apart: box %+v, want none", b)
	}
}

// cropNet is a diskNet that also runs on crops: there it sees the disk
// whether or not it sees it in the full frame (a small subject the
// network finds only when zoomed in). It records the crops asked for.
type cropNet struct {
	diskNet
	frames []int
	boxes  []Box
}

func (n *cropNet) CropObjectness(_ context.Context, i int, b Box, dst []float32) error {
	n.frames, n.boxes = append(n.frames, i), append(n.boxes, b)
	t := n.c.truth(i)
	for y := b.Y0; y < b.Y1; y++ {
		for x := b.X0; x < b.X1; x++ {
			v := float32(0.02)
			if t[y*n.c.w+x] >= 0.5 {
				v = 0.97
			}
			dst[(y-b.Y0)*b.W()+x-b.X0] = v
		}
	}
	return nil
}

func TestPropagateCropsSmallSubject(t *testing.T) {
	dev := kernels.NewCPU(2)
	defer dev.Close()
	const index = 5
	run := func(t *testing.T, c diskClip, o SelectOptions) (*cropNet, []float64) {
		t.Helper()
		key, _ := dev.NewImage(c.w, c.h, 1)
		defer dev.Free(key)
		if err := dev.WritePixels(key, c.truth(index)); err != nil {
			t.Fatal(err)
		}
		// The full-frame network misses the disk: only the crops see it.
		net := &cropNet{diskNet: diskNet{c: c, sees: false, every: 2, key: index}}
		js := make([]float64, c.n)
		err := Propagate(context.Background(), dev, c, net, index, key, o, func(i int, m kernels.Image) error {
			v, err := dev.ReadPixels(m)
			js[i] = iou(v, c.truth(i))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return net, js
	}
	// A disk of radius 14 in 320x200: 615 of 64000 pixels, under 1%.
	small := diskClip{dev: dev, w: 320, h: 200, n: 12, speed: 3}
	on := DefaultSelectOptions()
	on.Net.CropArea = SmallSubjectArea
	t.Run("small", func(t *testing.T) {
		net, js := run(t, small, on)
		// Every frame the network ran on, the keyframe first.
		if want := []int{5, 6, 8, 10, 11, 4, 2, 0}; !slices.Equal(net.frames, want) {
			t.Fatalf("crops on frames %v, want %v", net.frames, want)
		}
		for k, b := range net.boxes {
			i := net.frames[k]
			cx, cy := small.centre(i)
			// The disk spans 29 pixels (the carried shape up to 34): the
			// box is twice that, square, centred on the carried shape
			// (near the disk).
			if b.W() != b.H() || b.W() < 56 || b.W() > 68 {
				t.Errorf("frame %d: box %+v, want a square of side 56..68", i, b)
			}
			if float64(b.X0) > cx-14 || float64(b.X1) < cx+14 || float64(b.Y0) > cy-14 || float64(b.Y1) < cy+14 {
				t.Errorf("frame %d: box %+v does not hold the disk at (%.0f, %.0f)", i, b, cx, cy)
			}
		}
		for i, j := range js {
			if j < 0.85 {
				t.Errorf("frame %d: J %.3f with the crops, want >= 0.85", i, j)
			}
		}
	})
	t.Run("off", func(t *testing.T) {
		net, _ := run(t, small, DefaultSelectOptions()) // CropArea 0
		if len(net.frames) != 0 {
			t.Errorf("CropArea 0: crops on frames %v, want none", net.frames)
		}
	})
	// The same disk in 96x64 is 10% of the frame: no crop.
	t.Run("large", func(t *testing.T) {
		net, _ := run(t, diskClip{dev: dev, w: 96, h: 64, n: 12, speed: 1.5}, on)
		if len(net.frames) != 0 {
			t.Errorf("a subject of 10%% of the frame: crops on frames %v, want none", net.frames)
		}
	})
}

// sizeNet records the size of every picture the network is given and
// sees what is red, as redNet.
type sizeNet struct{ sizes [][2]int }

func (n *sizeNet) Segment(_ context.Context, rgb []float32, w, h int, dst []float32) error {
	n.sizes = append(n.sizes, [2]int{w, h})
	for p := range dst {
		dst[p] = min(max((rgb[p]-0.5)*20+0.5, 0), 1)
	}
	return nil
}

func TestPrepareCropsSmallSubject(t *testing.T) {
	dev := kernels.NewCPU(2)
	defer dev.Close()
	for _, tc := range []struct {
		name  string
		w, h  int
		on    bool
		crops int
	}{
		// 320x200: the disk is under 1%; the network runs on frames
		// 0,4,5,8,9 and again on a crop of each (the keyframe's from its
		// matte).
		{"small", 320, 200, true, 5},
		{"small, crops off (the default)", 320, 200, false, 0},
		{"large", 96, 64, true, 0},
	} {
		src := &diskSource{c: diskClip{dev: dev, w: tc.w, h: tc.h, n: 10, speed: 1.5}}
		net := &sizeNet{}
		m, err := Prepare(context.Background(), dev, src, PrepareOptions{Width: tc.w, Height: tc.h, Net: net, Crops: tc.on,
			Keyframe: &Keyframe{Index: 5, Read: func(context.Context, int, int) ([]float32, error) { return src.c.truth(5), nil }}})
		if err != nil {
			t.Fatal(err)
		}
		full, crops := 0, 0
		for _, s := range net.sizes {
			switch {
			case s == [2]int{tc.w, tc.h}:
				full++
			case s[0] == s[1] && s[0] >= 56 && s[0] <= 68:
				crops++ // twice the disk's 29 pixels
			default:
				t.Errorf("%s: the network was given a %dx%d picture", tc.name, s[0], s[1])
			}
		}
		if full != 5 || crops != tc.crops {
			t.Errorf("%s: %d full-frame runs and %d crop runs, want 5 and %d", tc.name, full, crops, tc.crops)
		}
		for i, a := range alphas(t, dev, m, src) {
			if j := iou(a, src.c.truth(i)); j < 0.9 {
				t.Errorf("%s: frame %d: J %.3f, want >= 0.9", tc.name, i, j)
			}
		}
		m.Close()
	}
}
