package render

import (
	"context"
	"testing"

	"github.com/vfxrender/vfx/frame"
)

// TestFrameHostMatchesFrame checks that the fused composite-and-download
// path gives the same bytes as Frame followed by Download, in both modes.
func TestFrameHostMatchesFrame(t *testing.T) {
	ctx := context.Background()
	d := newDev(t)
	const w, h = 67, 41
	s := makeScene(w, h, [3]float32{0.6, 0.4, 0.3})
	for _, fill := range []bool{false, true} {
		p := Params{Prompt: "warm key light from the left, blue rim light", Seed: 3, Width: w, Height: h, Fill: fill}
		ra, err := New(ctx, d, p)
		if err != nil {
			t.Fatal(err)
		}
		rb, err := New(ctx, d, p)
		if err != nil {
			t.Fatal(err)
		}
		src := upload(t, d, w, h, 3, s.src)
		alpha := upload(t, d, w, h, 1, s.alpha)
		out := upload(t, d, w, h, 3, nil)
		for i := 0; i < 3; i++ { // temporal state too
			want, _ := frame.New(frame.YUV420P, w, h)
			want.ColorSpace = frame.BT709
			if err := ra.Frame(ctx, out, src, alpha); err != nil {
				t.Fatal(err)
			}
			if err := d.Download(want, out); err != nil {
				t.Fatal(err)
			}
			got, _ := frame.New(frame.YUV420P, w, h)
			got.ColorSpace = frame.BT709
			if err := rb.FrameHost(ctx, got, src, alpha); err != nil {
				t.Fatal(err)
			}
			for pl := 0; pl < 3; pl++ {
				for k := range want.Planes[pl] {
					if want.Planes[pl][k] != got.Planes[pl][k] {
						t.Fatalf("fill=%v frame %d plane %d byte %d: FrameHost %d, Frame+Download %d", fill, i, pl, k, got.Planes[pl][k], want.Planes[pl][k])
					}
				}
			}
		}
		if err := rb.FrameHost(ctx, &frame.HostFrame{Format: frame.YUV420P, Width: w + 1, Height: h}, src, alpha); err == nil {
			t.Fatal("a host frame of the wrong size was accepted")
		}
		ra.Close()
		rb.Close()
	}
}
