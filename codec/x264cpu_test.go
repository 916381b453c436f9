package codec

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/vfxrender/vfx/frame"
)

func TestX264Params(t *testing.T) {
	const no = ":asm=" + x264NoAVX512
	for _, c := range []struct {
		params string
		width  int
		avx512 bool
		want   string
	}{
		{"rc-lookahead=20", 854, false, "rc-lookahead=20"}, // no AVX-512: nothing to avoid
		{"", 854, false, ""},
		{"rc-lookahead=20", 854, true, "rc-lookahead=20" + no},              // 54 macroblocks
		{"", 200, true, no[1:]},                                             // 13
		{"rc-lookahead=20", 1920, true, "rc-lookahead=20"},                  // 120: a multiple of 8
		{"rc-lookahead=20", 1280, true, "rc-lookahead=20"},                  // 80
		{"", 128, true, ""},                                                 // 8: the edge
		{"", 130, true, no[1:]},                                             // 9
		{"", 114, true, ""},                                                 // rounds up to 8
		{"", 112, true, no[1:]},                                             // 7
		{"rc-lookahead=20:asm=AVX2", 854, true, "rc-lookahead=20:asm=AVX2"}, // the caller's choice
		{"no-asm", 854, true, "no-asm"},
		{"rc-lookahead=20:no-asm=1", 854, true, "rc-lookahead=20:no-asm=1"},
		{"asmx=1", 854, true, "asmx=1" + no},
	} {
		if got := x264Params(c.params, c.width, c.avx512); got != c.want {
			t.Errorf("x264Params(%q, %d, %v) = %q, want %q", c.params, c.width, c.avx512, got, c.want)
		}
	}
}

// heapChildEnv names the file a child of TestEncodeIndependentOfHeap
// encodes into.
const heapChildEnv = "VFX_TEST_HEAP_CHILD"

// heapFrames writes n frames of a panning, smooth random texture with
// grain (motion for libx264's macroblock tree to propagate along) to enc
// and closes it.
func heapFrames(t testing.TB, enc *Encoder, w, h, n int) {
	rng := rand.New(rand.NewPCG(7, 31))
	tw, th := 2*w, 2*h
	grain := make([]byte, tw*th)
	for i := range grain {
		grain[i] = byte(40 + rng.IntN(160))
	}
	smooth := make([]byte, len(grain)) // a 7x7 box blur of grain
	for y := 0; y < th; y++ {
		for x := 0; x < tw; x++ {
			s, c := 0, 0
			for yy := max(0, y-3); yy <= min(th-1, y+3); yy++ {
				for xx := max(0, x-3); xx <= min(tw-1, x+3); xx++ {
					s += int(grain[yy*tw+xx])
					c++
				}
			}
			smooth[y*tw+x] = byte(s / c)
		}
	}
	ctx := context.Background()
	for i := 0; i < n; i++ {
		f := newFrame(t, frame.YUV420P, w, h)
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				v := 7*int(smooth[(y+i)%th*tw+(x+2*i)%tw]) + int(grain[(y*tw+x+977*i)%len(grain)])
				f.Planes[0][y*f.Strides[0]+x] = byte(v / 8)
			}
		}
		for p := 1; p < 3; p++ {
			pw, ph := f.PlaneDims(p)
			for y := 0; y < ph; y++ {
				for x := 0; x < pw; x++ {
					f.Planes[p][y*f.Strides[p]+x] = byte(100 + 20*p + (x+y+i)%16)
				}
			}
		}
		f.PTS = int64(i)
		if err := enc.Write(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestEncodeIndependentOfHeap encodes the same frames (a width of 13
// macroblocks, the default medium preset and its mb-tree) in child
// processes whose heaps glibc fills differently (MALLOC_PERTURB_): the
// decoded frames must be the same. libx264's AVX-512 mb-tree code reads
// memory it never wrote past the end of such rows (see x264Params); this
// fails where the CPU has AVX-512 and x264Params does not steer around
// it. (Without AVX-512, or with a C library that ignores MALLOC_PERTURB_,
// it passes either way.)
func TestEncodeIndependentOfHeap(t *testing.T) {
	const w, h, n = 200, 96, 24
	if out := os.Getenv(heapChildEnv); out != "" {
		enc, err := NewEncoder(context.Background(), out, EncoderOptions{Container: "mp4", Width: w, Height: h, Input: frame.YUV420P,
			FrameRate: Rational{25, 1}, ColorSpace: frame.BT709, X264Params: "rc-lookahead=20"})
		if err != nil {
			t.Fatal(err)
		}
		heapFrames(t, enc, w, h, n)
		return
	}
	if testing.Short() {
		t.Skip("runs the test binary three times")
	}
	dir := t.TempDir()
	var ref []*frame.HostFrame
	for k, perturb := range []string{"", "165", "77"} {
		out := filepath.Join(dir, fmt.Sprintf("heap%d.mp4", k))
		cmd := exec.Command(os.Args[0], "-test.run=^TestEncodeIndependentOfHeap$", "-test.count=1")
		cmd.Env = append(os.Environ(), heapChildEnv+"="+out, "MALLOC_PERTURB_="+perturb)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("child (MALLOC_PERTURB_=%q): %v\n%s", perturb, err, b)
		}
		info, frames := decodeAll(t, FileInput(out), DecodeOptions{Format: frame.YUV420P})
		if info.Frames != n || len(frames) != n {
			t.Fatalf("MALLOC_PERTURB_=%q: %d frames, want %d", perturb, len(frames), n)
		}
		if k == 0 {
			ref = frames
			continue
		}
		for i := range frames {
			for p := 0; p < 3; p++ {
				if _, mx := planeDiff(ref[i], frames[i], p); mx != 0 {
					t.Fatalf("MALLOC_PERTURB_=%q: frame %d plane %d differs from the first encode's (max %d codes)", perturb, i, p, mx)
				}
			}
		}
	}
}
