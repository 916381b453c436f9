package render

import "testing"

func TestOutputSize(t *testing.T) {
	tests := []struct {
		name         string
		w, h, max    int
		even         bool
		wantW, wantH int
	}{
		{"1080p at 1080", 1920, 1080, 1080, true, 1920, 1080},
		{"1080p at 720", 1920, 1080, 720, true, 1280, 720},
		{"4k at 1080", 3840, 2160, 1080, false, 1920, 1080},
		{"portrait at 720", 1080, 1920, 720, true, 720, 1280},
		{"portrait at 1080", 1080, 1920, 1080, false, 1080, 1920},
		{"4:3 2.77MP at 1080", 1920, 1440, 1080, true, 1440, 1080},
		{"4:3 2.77MP at 720", 1920, 1440, 720, true, 960, 720},
		{"small not upscaled", 640, 480, 1080, false, 640, 480},
		{"small not upscaled even", 640, 480, 720, true, 640, 480},
		{"odd unscaled", 641, 481, 1080, false, 641, 481},
		{"odd unscaled even", 641, 481, 1080, true, 640, 480},
		{"odd scaled", 1366, 769, 720, false, 1279, 720},
		{"odd scaled even", 1366, 769, 720, true, 1278, 720},
		{"1366x768 at 720 even", 1366, 768, 720, true, 1280, 720},
		{"extreme 4:1 landscape", 4000, 1000, 720, true, 2880, 720},
		{"extreme 1:4 portrait", 700, 2800, 720, true, 700, 2800},
		{"extreme 1:4 portrait scaled", 1000, 4000, 720, false, 720, 2880},
		{"tiny even never 0", 1, 1, 720, true, 2, 2},
		{"tiny odd", 3, 5, 720, false, 3, 5},
		{"square", 2000, 2000, 1080, true, 1080, 1080},
		{"no limit", 5000, 3000, 0, false, 5000, 3000},
		{"invalid", 0, 100, 720, true, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, h := OutputSize(tc.w, tc.h, tc.max, tc.even)
			if w != tc.wantW || h != tc.wantH {
				t.Fatalf("OutputSize(%d, %d, %d, %v) = %dx%d, want %dx%d", tc.w, tc.h, tc.max, tc.even, w, h, tc.wantW, tc.wantH)
			}
		})
	}
}

func TestOutputSizeProperties(t *testing.T) {
	for w := 1; w < 3000; w += 37 {
		for h := 1; h < 3000; h += 41 {
			for _, m := range []int{720, 1080} {
				for _, even := range []bool{false, true} {
					ow, oh := OutputSize(w, h, m, even)
					if ow <= 0 || oh <= 0 {
						t.Fatalf("%dx%d@%d: zero side %dx%d", w, h, m, ow, oh)
					}
					if min(ow, oh) > m {
						t.Fatalf("%dx%d@%d: shorter side %d above the limit", w, h, m, min(ow, oh))
					}
					if (ow > w && w > 1) || (oh > h && h > 1) {
						t.Fatalf("%dx%d@%d even=%v: upscaled to %dx%d", w, h, m, even, ow, oh)
					}
					if even && (ow%2 != 0 || oh%2 != 0) {
						t.Fatalf("%dx%d@%d: odd output %dx%d", w, h, m, ow, oh)
					}
					if min(w, h) > m+2 {
						in, out := float64(w)/float64(h), float64(ow)/float64(oh)
						if d := in/out - 1; d > 0.01 || d < -0.01 {
							t.Fatalf("%dx%d@%d: aspect %v became %v", w, h, m, in, out)
						}
					}
				}
			}
		}
	}
}
