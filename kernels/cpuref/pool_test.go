package cpuref

import "testing"

// TestCPUTrimPool: freed buffers stay pooled until TrimPool drops them;
// an image allocated after it is zeroed and works.
func TestCPUTrimPool(t *testing.T) {
	d := NewCPU(1)
	defer d.Close()
	im, err := d.NewImage(64, 32, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Fill(im, []float32{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	d.Free(im)
	if d.pool.bytes != 64*32*3*4 {
		t.Fatalf("pool holds %d bytes after Free, want %d", d.pool.bytes, 64*32*3*4)
	}
	d.TrimPool()
	if d.pool.bytes != 0 || len(d.pool.free) != 0 {
		t.Fatalf("pool holds %d bytes in %d sizes after TrimPool", d.pool.bytes, len(d.pool.free))
	}
	im, err = d.NewImage(64, 32, 3)
	if err != nil {
		t.Fatal(err)
	}
	v, err := d.ReadPixels(im)
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range v {
		if x != 0 {
			t.Fatalf("pixel value %d is %v after TrimPool, want 0", i, x)
		}
	}
}
