package codec

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/asticode/go-astiav"

	"github.com/vfxrender/vfx/frame"
)

// TestMatteLimitedLUT decodes limited-range BT.709 yuv420p mattes (every
// luma code, 0..255, lossless) into Gray8 with the table read back from
// swscale and with swscale alone: the same bytes. Grey chroma (all 128,
// as a roto tool's H.264 export holds it) goes through the table; other
// chroma (which swscale's grey of a BT.709 picture depends on) and a
// picture too small to hold every code in the probe go through swscale.
func TestMatteLimitedLUT(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		w, h      int
		cb        string
		wantLUT   bool // the probe built the table
		wantTable bool // frames went through it
	}{{322, 182, "128", true, true}, {322, 182, "mod(X+N,256)", true, false}, {8, 8, "128", false, false}} {
		t.Run(fmt.Sprintf("%dx%d cb %s", tc.w, tc.h, tc.cb), func(t *testing.T) {
			name := fmt.Sprintf("m%dx%d%v.mp4", tc.w, tc.h, tc.wantTable)
			ffmpeg(t, dir, "-f", "lavfi", "-i", fmt.Sprintf("nullsrc=s=%dx%d:d=0.12:r=25,geq=lum='mod(X*7+Y*13+N*29,256)':cb='%s':cr=128", tc.w, tc.h, tc.cb),
				"-pix_fmt", "yuv420p", "-colorspace", "bt709", "-color_primaries", "bt709", "-color_trc", "bt709", "-c:v", "libx264", "-qp", "0", name)
			decode := func(lut bool) ([]*frame.HostFrame, *lumaLUT) {
				ctx := context.Background()
				d, err := NewDecoder(ctx, FileInput(filepath.Join(dir, name)), DefaultLimits(), DecodeOptions{Format: frame.Gray8})
				if err != nil {
					t.Fatal(err)
				}
				defer d.Close()
				if d.info.FullRange {
					t.Fatal("the fixture is tagged full range")
				}
				if !lut {
					d.lumaLUT = lumaLUT{sf: astiav.PixelFormatYuv420P, w: tc.w, h: tc.h, probed: true}
				}
				out := readFrames(t, ctx, d)
				l := d.lumaLUT
				return out, &l
			}
			got, l := decode(true)
			want, _ := decode(false)
			if l.ok != tc.wantLUT {
				t.Fatalf("table built: %v, want %v", l.ok, tc.wantLUT)
			}
			if (l.frames > 0) != tc.wantTable || (tc.wantTable && l.frames != len(got)) {
				t.Fatalf("%d of %d frames through the table, want all: %v", l.frames, len(got), tc.wantTable)
			}
			// The conversion is the range expansion: 16 -> 0, 235 -> 255.
			if tc.wantLUT && (l.tab[16] != 0 || l.tab[235] != 255 || l.tab[0] != 0 || l.tab[255] != 255 || l.tab[126] != 128) {
				t.Fatalf("table: 0->%d 16->%d 126->%d 235->%d 255->%d", l.tab[0], l.tab[16], l.tab[126], l.tab[235], l.tab[255])
			}
			if len(got) != len(want) || len(got) < 2 {
				t.Fatalf("%d and %d frames", len(got), len(want))
			}
			for i := range got {
				for y := range tc.h {
					a := got[i].Planes[0][y*got[i].Strides[0]:][:tc.w]
					b := want[i].Planes[0][y*want[i].Strides[0]:][:tc.w]
					if !bytes.Equal(a, b) {
						t.Fatalf("frame %d row %d differs from swscale's", i, y)
					}
				}
			}
		})
	}
}
