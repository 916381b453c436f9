package infer

import (
	"context"
	"errors"
	"os"
	"testing"
)

// TestFeatureOutput loads IS-Net at 256 with and without its feature
// output: the map is the same bit for bit, the features have the shape of
// the encoder's fifth stage (512 planes at 1/32 of the input) and are
// non-negative (a ReLU sum); an unknown tensor is refused at load.
func TestFeatureOutput(t *testing.T) {
	dir := installed(t)
	rt, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	plain, err := ISNetIMGLY().At(256)
	if err != nil {
		t.Fatal(err)
	}
	plain.Features = ""
	withF := plain
	withF.Features = ISNetFeatures
	ctx := context.Background()
	mp, err := rt.Load(ctx, plain)
	if err != nil {
		t.Fatal(err)
	}
	mf, err := rt.Load(ctx, withF)
	if err != nil {
		t.Fatal(err)
	}
	w, h := 96, 64
	rgb := make([]float32, 3*w*h)
	for i := range rgb {
		rgb[i] = float32((i*7919)%255) / 255
	}
	a, b := make([]float32, w*h), make([]float32, w*h)
	if err := mp.Segment(ctx, rgb, w, h, a); err != nil {
		t.Fatal(err)
	}
	if _, err := mp.SegmentFeatures(ctx, rgb, w, h, b); !errors.Is(err, ErrNoFeatures) {
		t.Errorf("features of a card without them: err = %v, want ErrNoFeatures", err)
	}
	f, err := mf.SegmentFeatures(ctx, rgb, w, h, b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("pixel %d: %v with the feature output, %v without", i, b[i], a[i])
		}
	}
	if f.C != 512 || f.W != 8 || f.H != 8 || len(f.Data) != f.C*f.W*f.H {
		t.Fatalf("features %dx%dx%d (%d values), want 512 x 8 x 8", f.C, f.H, f.W, len(f.Data))
	}
	pos := 0
	for _, v := range f.Data {
		if v < 0 {
			t.Fatalf("negative feature %v", v)
		}
		if v > 0 {
			pos++
		}
	}
	if pos < len(f.Data)/20 {
		t.Errorf("only %d of %d features are positive", pos, len(f.Data))
	}
	bad := plain
	bad.Features = "/no/such/tensor"
	if _, err := rt.Load(ctx, bad); err == nil {
		t.Error("a card naming a tensor the graph lacks loaded")
	}
	model, err := os.ReadFile(dir + "/" + plain.File)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := AddFeatureOutput(model, "/no/such/tensor"); err == nil {
		t.Error("AddFeatureOutput of an unknown tensor: no error")
	}
}
