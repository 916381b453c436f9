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
}

func (c diskClip) Len() int { return c.n }

func (c diskClip) centre(i int) (float64, float64) { return 20 + c.speed*float64(i), 32 }

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
	err := Propagate(context.Background(), dev, c, index, key, DefaultSelectOptions(), func(i int, m kernels.Image) error {
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
	if err := Propagate(context.Background(), dev, c, 12, key, DefaultSelectOptions(), nil); !errors.Is(err, ErrKeyframe) {
		t.Errorf("index 12 of 12: err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Propagate(ctx, dev, c, 0, key, DefaultSelectOptions(), func(int, kernels.Image) error { return nil }); !errors.Is(err, context.Canceled) {
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

func TestAutoPlanChoosesStatic(t *testing.T) {
	dev := kernels.NewCPU(2)
	// Fast enough that no pixel is covered in most frames: the median is
	// the background.
	c := diskClip{dev: dev, w: 200, h: 64, n: 12, speed: 14}
	plan, err := PlanAuto(context.Background(), dev, c, c.w, c.h, DefaultAutoOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer plan.Close()
	if plan.Kind != AutoStatic {
		t.Fatalf("kind %v, want static", plan.Kind)
	}
	var worst = 1.0
	if err := plan.Mattes(context.Background(), c, func(i int, m kernels.Image) error {
		v, _ := dev.ReadPixels(m)
		worst = math.Min(worst, iou(v, c.truth(i)))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if worst < 0.85 {
		t.Errorf("static auto: worst IoU %.3f", worst)
	}
}
