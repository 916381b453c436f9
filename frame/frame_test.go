package frame

import "testing"

// A Gray16 frame holds two bytes a sample, little-endian, in one plane.
func TestGray16(t *testing.T) {
	f, err := New(Gray16, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	if w, h := f.PlaneDims(0); w != 6 || h != 2 || f.Strides[0] != 6 || f.Format.NumPlanes() != 1 {
		t.Fatalf("plane %dx%d stride %d", w, h, f.Strides[0])
	}
	f.Planes[0][2*4], f.Planes[0][2*4+1] = 0x34, 0x12 // (1, 1)
	if v := f.Gray16At(1, 1); v != 0x1234 {
		t.Fatalf("Gray16At = %#x, want 0x1234", v)
	}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	f.Planes[0] = f.Planes[0][:8]
	if err := f.Validate(); err == nil {
		t.Error("a short Gray16 plane validated")
	}
	if s := Gray16.String(); s != "gray16le" {
		t.Errorf("String = %q", s)
	}
	if _, err := New(PixelFormat(99), 2, 2); err == nil {
		t.Error("an unknown format was allocated")
	}
}
