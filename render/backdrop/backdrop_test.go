package backdrop

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/vfxrender/vfx/render/prompt"
)

// TestSynth: every scene paints a frame of the asked size that is neither
// black nor flat; the same seed gives the same bytes, another seed other
// bytes; a 1x1 frame works.
func TestSynth(t *testing.T) {
	prompts := []string{"", "sunny beach", "forest at dusk", "city at night", "desert sunset",
		"snow", "office interior", "neon", "teal and orange backdrop, studio"}
	for _, p := range prompts {
		l := prompt.Parse(p)
		make1 := func(seed uint64, w, h int) []byte {
			rng := rand.New(rand.NewPCG(seed, 1))
			f, err := Synth(&l, rng, 96, 54).RGB24(w, h, rng.Uint32())
			if err != nil {
				t.Fatal(err)
			}
			if f.Width != w || f.Height != h {
				t.Fatalf("%q: %dx%d, want %dx%d", p, f.Width, f.Height, w, h)
			}
			return append([]byte(nil), f.Planes[0][:3*w*h]...)
		}
		a, b, c := make1(1, 200, 120), make1(1, 200, 120), make1(2, 200, 120)
		if !bytes.Equal(a, b) {
			t.Errorf("%q: same seed, different bytes", p)
		}
		if bytes.Equal(a, c) {
			t.Errorf("%q: seeds 1 and 2 give the same bytes", p)
		}
		lo, hi := byte(255), byte(0)
		for _, v := range a {
			lo, hi = min(lo, v), max(hi, v)
		}
		if hi < 20 || hi-lo < 10 {
			t.Errorf("%q: values %d..%d", p, lo, hi)
		}
		make1(3, 1, 1)
	}
}
