package kernels

import (
	"errors"
	"math"
	"testing"

	"github.com/vfxrender/vfx/frame"
)

// foreign is an Image of some other device.
type foreign struct{}

func (foreign) Width() int    { return 4 }
func (foreign) Height() int   { return 4 }
func (foreign) Channels() int { return 3 }

// runAllOps runs every op on d with inputs derived from a fixed seed and
// returns each result as float64 values, keyed by op.
func runAllOps(t *testing.T, d *CPU) map[string][]float64 {
	t.Helper()
	const w, h = 640, 360
	n := w * h
	rng := newRNG(99)
	rgb := img(t, d, w, h, 3, randVals(rng, 3*n, 0, 1))
	rgb2 := img(t, d, w, h, 3, randVals(rng, 3*n, 0, 1))
	alpha := img(t, d, w, h, 1, randAlpha(rng, n))
	alpha2 := img(t, d, w, h, 1, randAlpha(rng, n))
	nrm := img(t, d, w, h, 3, randNormals(rng, n, true))
	lowG := img(t, d, 97, 55, 3, randVals(rng, 3*97*55, 0.5, 1.5))
	lowA := img(t, d, 97, 55, 1, randAlpha(rng, 97*55))
	out := map[string][]float64{}
	keep := func(name string, m Image, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = to64(pixels(t, d, m))
	}
	o3 := func() Image { return img(t, d, w, h, 3, nil) }
	o1 := func() Image { return img(t, d, w, h, 1, nil) }

	yuv, _ := frame.New(frame.YUV420P, w, h)
	for p := range 3 {
		for i := range yuv.Planes[p] {
			yuv.Planes[p][i] = byte(rng.IntN(256))
		}
	}
	m := o3()
	keep("Upload", m, d.Upload(m, yuv))
	if err := d.Download(yuv, rgb); err != nil {
		t.Fatal(err)
	}
	var bytes []float64
	for p := range 3 {
		for _, b := range yuv.Planes[p] {
			bytes = append(bytes, float64(b))
		}
	}
	out["Download"] = bytes

	m = o1()
	keep("Luma", m, d.Luma(m, rgb))
	m = img(t, d, 1000, 700, 3, nil)
	keep("ResizeBilinear", m, d.ResizeBilinear(m, rgb))
	m = img(t, d, 160, 90, 3, nil)
	keep("ResizeArea", m, d.ResizeArea(m, rgb))
	m = img(t, d, 333, 500, 3, nil)
	keep("ResizeLanczos3", m, d.ResizeLanczos3(m, rgb))
	m = img(t, d, 300, 300, 3, nil)
	keep("CoverFit", m, d.CoverFit(m, rgb))
	m = o3()
	keep("GaussianBlur", m, d.GaussianBlur(m, rgb, 3))
	m = o3()
	keep("BoxFilter", m, d.BoxFilter(m, rgb, 7))
	m = o3()
	keep("GuidedFilter", m, d.GuidedFilter(m, alpha, rgb, 5, 0.01))
	m = o1()
	keep("GuidedFilterColour", m, d.GuidedFilterColour(m, rgb, alpha, 5, 2e-4))
	m = o1()
	keep("GuidedFilterColour/fast", m, d.GuidedFilterColour(m, rgb, lowA, 2, 2e-4))
	m = o3()
	keep("Composite", m, d.Composite(m, rgb, rgb2, alpha))
	m = o3()
	keep("LightWrap", m, d.LightWrap(m, rgb, rgb2, alpha, alpha2, 0.5))
	m = o3()
	keep("RatioRelight", m, d.RatioRelight(m, rgb, rgb2, alpha2, alpha, 0.05, 4))
	m = o3()
	keep("SHEval", m, d.SHEval(m, nrm, []SH9{{1, 0.2, 0.3}, {0.5, 0, 0, 0.1}, {0.9, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1}}))
	m = o1()
	keep("DistanceTransform", m, d.DistanceTransform(m, alpha, 0.5))
	dist := m
	m = o3()
	keep("NormalsFromMatte", m, d.NormalsFromMatte(m, dist, alpha2, 20, 0.5))
	m = o3()
	keep("GainComposite", m, d.GainComposite(m, rgb, alpha, lowG, rgb2, rgb, lowA, 0.4, 2))
	st, err := d.LabStats(rgb, alpha)
	if err != nil {
		t.Fatal(err)
	}
	out["LabStats"] = append(append(st.Mean[:], st.Std[:]...), st.Weight)
	st2, err := d.LabStats(rgb2, nil)
	if err != nil {
		t.Fatal(err)
	}
	m = o3()
	keep("LabTransfer", m, d.LabTransfer(m, rgb, alpha, st, st2, 0.7))

	s, err := d.Sum(rgb)
	if err != nil {
		t.Fatal(err)
	}
	out["Sum"] = s
	ms, err := d.MaskedStats(rgb, alpha)
	if err != nil {
		t.Fatal(err)
	}
	out["MaskedStats"] = append(append(ms.Mean, ms.Std...), ms.Weight)
	env, err := d.SHProjectEnv(rgb, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	for c := range 3 {
		for _, v := range env[c] {
			out["SHProjectEnv"] = append(out["SHProjectEnv"], float64(v))
		}
	}
	ata, atb, err := d.SHNormalEquations(alpha, nrm, alpha2)
	if err != nil {
		t.Fatal(err)
	}
	out["SHNormalEquations"] = append(ata[:], atb[:]...)
	return out
}

func TestDeterministicAcrossWorkerCounts(t *testing.T) {
	a := runAllOps(t, NewCPU(1))
	b := runAllOps(t, NewCPU(4))
	c := runAllOps(t, NewCPU(3))
	for name, va := range a {
		t.Run(name, func(t *testing.T) {
			for _, vb := range [][]float64{b[name], c[name]} {
				if len(va) != len(vb) {
					t.Fatalf("lengths %d vs %d", len(va), len(vb))
				}
				for i := range va {
					if math.Float64bits(va[i]) != math.Float64bits(vb[i]) {
						t.Fatalf("value %d: %v with 1 worker, %v with more", i, va[i], vb[i])
					}
				}
			}
		})
	}
}

func TestShapeErrors(t *testing.T) {
	d := NewCPU(2)
	a3 := img(t, d, 8, 6, 3, nil)
	b3 := img(t, d, 7, 6, 3, nil)
	a1 := img(t, d, 8, 6, 1, nil)
	b1 := img(t, d, 8, 5, 1, nil)
	low := img(t, d, 3, 2, 3, nil)
	cases := map[string]error{
		"Fill":                            d.Fill(a3, []float32{1}),
		"Copy":                            d.Copy(a3, b3),
		"Copy channels":                   d.Copy(a3, a1),
		"Luma":                            d.Luma(a3, a3),
		"ResizeBilinear":                  d.ResizeBilinear(a3, a1),
		"ResizeArea":                      d.ResizeArea(img(t, d, 9, 6, 3, nil), a3),
		"ResizeLanczos3":                  d.ResizeLanczos3(a1, a3),
		"CoverFit":                        d.CoverFit(a1, a3),
		"GaussianBlur":                    d.GaussianBlur(a3, b3, 1),
		"BoxFilter":                       d.BoxFilter(a1, b1, 1),
		"GuidedFilter":                    d.GuidedFilter(a3, a3, a3, 1, 0.1),
		"GuidedFilterColour guide":        d.GuidedFilterColour(a1, a1, a1, 1, 0.1),
		"GuidedFilterColour dst is guide": d.GuidedFilterColour(a3, a3, a3, 1, 0.1),
		"GuidedFilterColour size":         d.GuidedFilterColour(b1, a3, b1, 1, 0.1),
		"Composite":                       d.Composite(a3, a3, b3, a1),
		"Composite alpha":                 d.Composite(a3, a3, a3, b1),
		"LightWrap":                       d.LightWrap(a3, a3, a3, a1, b1, 1),
		"RatioRelight":                    d.RatioRelight(a3, a3, img(t, d, 8, 6, 2, nil), a1, nil, 0.1, 2),
		"MaskedStats":                     func() error { _, err := d.MaskedStats(a3, b1); return err }(),
		"SHProjectEnv":                    func() error { _, err := d.SHProjectEnv(a1, 1); return err }(),
		"SHNormalEquations":               func() error { _, _, err := d.SHNormalEquations(a1, a1, nil); return err }(),
		"SHEval":                          d.SHEval(a3, b3, make([]SH9, 3)),
		"LabStats":                        func() error { _, err := d.LabStats(a1, nil); return err }(),
		"LabTransfer":                     d.LabTransfer(a3, a3, b1, LabStats{}, LabStats{}, 1),
		"DistanceTransform":               d.DistanceTransform(a1, b1, 0.5),
		"NormalsFromMatte":                d.NormalsFromMatte(a1, a1, nil, 1, 0),
		"GainComposite":                   d.GainComposite(a3, a3, a1, low, b3, nil, nil, 0, 1),
		"GainComposite bg":                d.GainComposite(a3, a3, a1, low, nil, nil, nil, 0, 1),
		"WritePixels":                     d.WritePixels(a1, make([]float32, 3)),
	}
	for name, err := range cases {
		if !errors.Is(err, ErrShape) {
			t.Errorf("%s: error %v, want ErrShape", name, err)
		}
	}
	for _, s := range [][3]int{{0, 1, 1}, {1, 0, 1}, {1, 1, 0}, {1, 1, 5}, {-3, 2, 1}, {1 << 20, 1 << 20, 1}} {
		if _, err := d.NewImage(s[0], s[1], s[2]); !errors.Is(err, ErrShape) {
			t.Errorf("NewImage%v: %v, want ErrShape", s, err)
		}
	}
}

func TestForeignAndFreedImages(t *testing.T) {
	d := NewCPU(2)
	a := img(t, d, 4, 4, 3, nil)
	a1 := img(t, d, 4, 4, 1, nil)
	f := foreign{}
	check := func(name string, err error) {
		t.Helper()
		if !errors.Is(err, ErrForeignImage) {
			t.Errorf("%s: %v, want ErrForeignImage", name, err)
		}
	}
	check("Copy", d.Copy(a, f))
	check("Fill", d.Fill(f, []float32{1, 2, 3}))
	check("Composite", d.Composite(a, a, a, f))
	check("GainComposite", d.GainComposite(a, a, nil, f, nil, nil, nil, 0, 1))
	check("GaussianBlur", d.GaussianBlur(f, a, 1))
	check("GuidedFilterColour", d.GuidedFilterColour(a1, f, a1, 1, 0.1))
	check("LabTransfer", d.LabTransfer(a, a, f, LabStats{}, LabStats{}, 1))
	_, err := d.Sum(f)
	check("Sum", err)
	_, err = d.ReadPixels(f)
	check("ReadPixels", err)
	_, err = d.ReadPixelsTo(make([]float32, 48), f)
	check("ReadPixelsTo", err)
	gray, _ := frame.New(frame.Gray8, 4, 4)
	check("Download", d.Download(gray, f))
	d.Free(f) // no-op, no panic

	d.Free(a1)
	d.Free(a1) // idempotent
	check("after Free", d.Luma(a1, a))
	d.Free(nil)
}

// TestReadPixelsTo: ReadPixelsTo gives ReadPixels' values, in dst's
// memory when its capacity is enough (just enough included) and in a new
// slice when it is one value short.
func TestReadPixelsTo(t *testing.T) {
	d := NewCPU(2)
	vals := make([]float32, 5*3*2)
	for i := range vals {
		vals[i] = float32(i) / 7
	}
	a := img(t, d, 5, 3, 2, vals)
	want, err := d.ReadPixels(a)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		dst   []float32
		reuse bool
	}{
		{"nil", nil, false},
		{"one short", make([]float32, 3, len(vals)-1), false},
		{"just enough", make([]float32, 0, len(vals)), true},
		{"larger, longer", make([]float32, 64), true},
	} {
		got, err := d.ReadPixelsTo(c.dst, a)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d values, want %d", c.name, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: value %d = %v, want %v", c.name, i, got[i], want[i])
			}
		}
		same := cap(c.dst) > 0 && &got[:1][0] == &c.dst[:1][0]
		if same != c.reuse {
			t.Errorf("%s: reused dst's memory %v, want %v", c.name, same, c.reuse)
		}
	}
}

func TestPoolReuseIsZeroed(t *testing.T) {
	d := NewCPU(2)
	a := img(t, d, 640, 480, 3, nil)
	if err := d.Fill(a, []float32{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	d.Free(a)
	b := img(t, d, 640, 480, 3, nil)
	for i, v := range pixels(t, d, b) {
		if v != 0 {
			t.Fatalf("reused image not zeroed at %d: %v", i, v)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := d.NewImage(2, 2, 1); err == nil {
		t.Fatal("NewImage after Close succeeded")
	}
	// Existing images still work after Close.
	if err := d.Fill(b, []float32{1, 1, 1}); err != nil {
		t.Fatal(err)
	}
	d.Free(b)
	if d.Name() != "cpu" || d.Ops() == nil || NewCPU(0).Workers() < 1 {
		t.Fatal("device identity")
	}
}

func TestAbsurdParametersDoNotPanic(t *testing.T) {
	d := NewCPU(2)
	rng := newRNG(98)
	w, h := 9, 7
	src := randVals(rng, 3*w*h, 0, 1)
	S, O := img(t, d, w, h, 3, src), img(t, d, w, h, 3, nil)
	G := img(t, d, w, h, 1, randVals(rng, w*h, 0, 1))
	if err := d.GaussianBlur(O, S, float32(math.Inf(1))); err == nil {
		t.Error("GaussianBlur(+Inf sigma): no error")
	}
	if err := d.GaussianBlur(O, S, 1e30); err == nil {
		t.Error("GaussianBlur(1e30): no error")
	}
	if err := d.GaussianBlur(O, S, float32(math.NaN())); err != nil {
		t.Errorf("GaussianBlur(NaN) should copy: %v", err)
	}
	// A radius beyond the image is the whole (clipped) image.
	if err := d.BoxFilter(O, S, math.MaxInt/2); err != nil {
		t.Fatal(err)
	}
	want := make([]float64, 0, 3*w*h)
	for c := range 3 {
		want = append(want, refBox(to64(src[c*w*h:(c+1)*w*h]), w, h, w+h)...)
	}
	closeAll(t, "box huge r", pixels(t, d, O), want, 1e-6, 1e-6)
	if err := d.GuidedFilter(O, G, S, math.MaxInt/2, 0.01); err != nil {
		t.Fatal(err)
	}
	if err := d.GaussianBlur(O, S, 40); err != nil { // folded tail
		t.Fatal(err)
	}
	closeAll(t, "gauss sigma 40", pixels(t, d, O), refGauss(src, w, h, 3, 40), 1e-5, 1e-5)
}
