package infer

import (
	"context"
	"math"
	"testing"

	ort "github.com/yalue/onnxruntime_go"
)

func TestHalfToFloat(t *testing.T) {
	for _, c := range []struct {
		h    uint16
		want float32
	}{
		{0x3c00, 1}, {0xc000, -2}, {0x7bff, 65504}, {0x0001, 1.0 / (1 << 24)},
		{0x8001, -1.0 / (1 << 24)}, {0x03ff, 1023.0 / (1 << 24)}, {0x0400, 1.0 / (1 << 14)},
		{0x3555, 0.333251953125}, {0x0000, 0},
	} {
		if got := halfToFloat(c.h); got != c.want {
			t.Errorf("halfToFloat(%#04x) = %g, want %g", c.h, got, c.want)
		}
	}
	if got := halfToFloat(0x8000); got != 0 || !math.Signbit(float64(got)) {
		t.Errorf("halfToFloat(0x8000) = %g, want -0", got)
	}
	if !math.IsInf(float64(halfToFloat(0x7c00)), 1) || !math.IsInf(float64(halfToFloat(0xfc00)), -1) {
		t.Error("fp16 infinities not kept")
	}
	if !math.IsNaN(float64(halfToFloat(0x7e00))) {
		t.Error("fp16 NaN not kept")
	}
	if _, err := Float32Graph([]byte("not a model")); err == nil {
		t.Error("Float32Graph of text: no error")
	}
}

// TestFloat32Model compares the CPU session (Load runs the fp16 model's
// graph in fp32) with a session made from the fp16 file as it is, on the
// same input: the same network, so the maps agree closely.
func TestFloat32Model(t *testing.T) {
	dir := installed(t)
	rt, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	c := ISNetIMGLY()
	c.Int8 = nil // fp32 (TestQuantizedModel compares the 8-bit graph)
	wide, err := rt.Load(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	path, err := c.Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	so, err := ort.NewSessionOptions()
	if err != nil {
		t.Fatal(err)
	}
	defer so.Destroy()
	s, err := ort.NewDynamicAdvancedSession(path, []string{c.Input}, []string{c.Output}, so)
	if err != nil {
		t.Fatal(err)
	}
	half := &Model{card: c, path: path, sess: s}
	defer half.Close()
	n := c.Width * c.Height
	in := make([]float32, 3*n)
	for i := range in {
		x, y := i%c.Width, (i/c.Width)%c.Height
		in[i] = float32(0.4*math.Sin(float64(x)/37+float64(y)/53) + 0.3*math.Cos(float64(x*y)/9000))
		if (x-400)*(x-400)+(y-600)*(y-600) < 200*200 {
			in[i] = 0.45 - float32(i/n)*0.3
		}
	}
	a, b := make([]float32, n), make([]float32, n)
	if err := wide.Run(ctx, in, a); err != nil {
		t.Fatal(err)
	}
	if err := half.Run(ctx, in, b); err != nil {
		t.Fatal(err)
	}
	var worst float64
	for i := range a {
		worst = max(worst, math.Abs(float64(a[i]-b[i])))
	}
	t.Logf("fp32 graph against the fp16 file: largest difference %.5f", worst)
	if worst > 0.01 {
		t.Errorf("fp32 graph against the fp16 file: largest difference %.4f, want <= 0.01", worst)
	}
}
