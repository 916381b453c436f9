//go:build goexperiment.simd && amd64

package rows

import (
	"fmt"
	"math"
	"testing"

	"github.com/vfxrender/vfx/frame"
)

// withScalar runs f with the vector loops off (simdOn false), then
// restores them.
func withScalar(f func()) {
	on := simdOn
	simdOn = false
	defer func() { simdOn = on }()
	f()
}

// sameBits fails unless a and b hold the same float32 bits (any NaN
// matches any NaN).
func sameBits(t *testing.T, what string, a, b []float32) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d values, want %d", what, len(a), len(b))
	}
	for i := range a {
		x, y := a[i], b[i]
		if x != x && y != y {
			continue
		}
		if math.Float32bits(x) != math.Float32bits(y) {
			t.Fatalf("%s: value %d: vector %v (%#x), scalar %v (%#x)", what, i, x, math.Float32bits(x), y, math.Float32bits(y))
		}
	}
}

// edgy returns n values in [lo, hi) with the edge cases mixed in: NaN,
// ±Inf, ±0, denormals, huge values.
func edgy(seed uint64, n int, lo, hi float64) []float32 {
	rng := newRNG(seed)
	v := randVals(rng, n, lo, hi)
	specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0,
		float32(math.Copysign(0, -1)), 1e-40, -1e-40, 3e38, -3e38, 1, 4}
	for i := range v {
		if rng.IntN(7) == 0 {
			v[i] = specials[rng.IntN(len(specials))]
		}
	}
	return v
}

// TestSIMDMatchesScalar checks every vector loop against its scalar loop
// bit for bit, on lengths that leave every tail (0..7 values) and on
// values with NaN, infinities, signed zeros and denormals.
func TestSIMDMatchesScalar(t *testing.T) {
	if !simdOn {
		t.Skip("this CPU has no AVX2: the vector loops never run")
	}
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 64, 101, 480} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			seed := uint64(n + 1)
			s, en, eo, al := edgy(seed, n, -0.5, 2), edgy(seed+1, n, -0.5, 3), edgy(seed+2, n, -0.5, 2), edgy(seed+3, n, -0.2, 1.2)
			b, wf, bb, g1 := edgy(seed+4, n, 0, 1), edgy(seed+5, n, 0, 1), edgy(seed+6, n, 0, 1), edgy(seed+7, n, 0, 3)
			run := func(f func(q []float32)) (vec, sc []float32) {
				vec, sc = make([]float32, n), make([]float32, n)
				f(vec)
				withScalar(func() { f(sc) })
				return
			}
			check := func(what string, f func(q []float32)) {
				v, s := run(f)
				sameBits(t, what, v, s)
			}
			check("ratioRow", func(q []float32) { RatioRow(q, s, en, eo, nil, 0.05, 4) })
			check("ratioRow alpha", func(q []float32) { RatioRow(q, s, en, eo, al, 0.05, 4) })
			check("vlerp", func(q []float32) { Vlerp(q, s, en, 0.3, 0.7) })
			check("scaleRow", func(q []float32) { ScaleRow(q, al, 0.37) })
			for _, nk := range []int{1, 2, 13, 64} {
				k := edgy(seed+40, nk, -0.3, 1)
				src := make([][]float32, nk)
				for j := range src {
					src[j] = edgy(seed+41+uint64(j), n+3, -0.5, 2)[j%4:]
				}
				check(fmt.Sprint("sumTaps ", nk), func(q []float32) { SumTaps(q, src, k) })
			}
			check("shadeRow", func(q []float32) { ShadeRow(q, b, al) })
			check("wrapFactor", func(q []float32) { WrapFactor(q, al, b, 0.4) })
			check("wrapFactor nil", func(q []float32) { WrapFactor(q, nil, b, 0.4) })
			check("gainRow", func(q []float32) { GainRow(q, s, en, g1, 0.25, 0.75, 1) })
			check("gainCompRow", func(q []float32) { GainCompRow(q, s, en, g1, 0.25, 0.75, 1, al, b) })
			check("gainCompWrapRow", func(q []float32) { GainCompWrapRow(q, s, en, g1, 0.25, 0.75, 1, al, b, wf, bb) })
			check("gainWrapRow", func(q []float32) { GainWrapRow(q, s, en, g1, 0.25, 0.75, 1, wf, bb) })
			check("gainOneRow", func(q []float32) { GainOneRow(q, s, en, g1, 0.25, 0.75, 1) })
			check("gainOneWrapRow", func(q []float32) { GainOneWrapRow(q, s, en, g1, 0.25, 0.75, 1, wf, bb) })
			fm0, fm1, bm0, bm1 := edgy(seed+12, n, -0.1, 1.2), edgy(seed+13, n, -0.1, 1.2), edgy(seed+14, n, 0, 1), edgy(seed+15, n, 0, 1)
			for _, lr := range []struct {
				name string
				r    LookRun
			}{
				{"all", LookRun{Al: al, B: b, Wf: wf, Bb: bb, Sh: g1, Fm0: fm0, Fm1: fm1, Bm0: bm0, Bm1: bm1}},
				{"est", LookRun{Al: al, B: b, Fm0: fm0, Fm1: fm1, Bm0: bm0, Bm1: bm1}},
				{"est wrap", LookRun{Al: al, B: b, Wf: wf, Bb: bb, Fm0: fm0, Fm1: fm1, Bm0: bm0, Bm1: bm1}},
				{"shadow", LookRun{Al: al, B: b, Sh: wf}},
				{"shadow wrap", LookRun{Al: al, B: b, Sh: wf, Wf: wf, Bb: bb}},
			} {
				check("gainLookRow "+lr.name, func(q []float32) { r := lr.r; GainLookRow(q, s, en, g1, 0.25, 0.75, 1, &r) })
			}
			// grainRow: three channels, a grain tile narrower than the row
			// (segments that wrap round it), amounts with NaN and infinities.
			for _, tw := range []int{5, 13, 64} {
				gr := edgy(seed+16, 3*tw, -3, 3) // a tw x 3 tile, read at row 1+1 from column 2
				run3 := func() [3][]float32 {
					q := [3][]float32{append([]float32(nil), s...), append([]float32(nil), b...), append([]float32(nil), en...)}
					GrainRow(q, al, gr[2*tw:][:tw], 2%tw, 0.05, 1.5, 0, n)
					return q
				}
				v := run3()
				var sc [3][]float32
				withScalar(func() { sc = run3() })
				for c := range 3 {
					sameBits(t, fmt.Sprintf("grainRow tile %d channel %d", tw, c), v[c], sc[c])
				}
			}
			// hlerp: upsampling 4x (the gain's), 1.5x and 8/7 (blocks of 8
			// within 8 source columns), downsampling (none), all clamped at
			// both edges; the source row ends where the table does.
			for _, in := range []int{(n + 3) / 4, (2*n + 2) / 3, (7*n + 7) / 8, n/2 + 1, n + 5} {
				xt := BilinTable(n, in)
				r := edgy(seed+17, in, -0.5, 2)
				check(fmt.Sprintf("hlerp %d from %d", n, in), func(q []float32) { hlerp(q, r, &xt) })
			}
			// eqPrefixSIMD: the run it reports holds, and the next value
			// (when within its whole blocks) breaks it.
			runs := make([]float32, n)
			for i := range runs {
				switch (i / 5) % 4 {
				case 0:
					runs[i] = 0
				case 1:
					runs[i] = 1
				case 2:
					runs[i] = float32(math.Copysign(0, -1))
				default:
					runs[i] = al[i]
				}
			}
			for _, v := range []float32{0, 1} {
				for _, want := range []bool{true, false} {
					for st := 0; st < n; st += 3 {
						k := st + EqPrefixSIMD(runs[st:], v, want)
						for i := st; i < k; i++ {
							if (runs[i] == v) != want {
								t.Fatalf("eqPrefixSIMD(%v, %v) from %d: %d is in the run (%v)", v, want, st, i, runs[i])
							}
						}
						if k < st+(n-st)&^7 && (runs[k] == v) == want {
							t.Fatalf("eqPrefixSIMD(%v, %v) from %d: stops at %d inside the run", v, want, st, k)
						}
					}
				}
			}
			check("gaussRow", func(q []float32) { copy(q, s); GaussRow(q, s, GaussKernel(1.5, n)) })
			for _, k := range [][]float32{{0.5}, {0.2, 0.3, 0.5}, {0.4, 0.1, 0.2, 0.3}, {0.1, 0.2, 0.3, 0.15, 0.25}, {0.3, 0.7}, {0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.4}} {
				rows := edgy(seed+11, 8*n, -0.5, 2) // eight rows of n
				check(fmt.Sprintf("vtaps %d", len(k)), func(q []float32) { Vtaps(q, rows, n, 0, k) })
			}
			nx, ny, nz := edgy(seed+8, n, -1, 1), edgy(seed+9, n, -1, 1), edgy(seed+10, n, -1, 1)
			cf := [][9]float32{{1, 0.1, -0.2, 0.3, 0.05, -0.1, 0.2, 0.03, -0.07}, {0.9, 0.2}, {1.1, 0, 0, 0.4, 0, 0, -0.3}}
			for _, c := range []int{1, 3} {
				v, sc := make([][]float32, c), make([][]float32, c)
				for i := range c {
					v[i], sc[i] = make([]float32, n), make([]float32, n)
				}
				SHEvalRows(v, nx, ny, nz, cf[:c])
				withScalar(func() { SHEvalRows(sc, nx, ny, nz, cf[:c]) })
				for i := range c {
					sameBits(t, fmt.Sprintf("shEvalRows %d/%d", i, c), v[i], sc[i])
				}
			}
			// shNormalRows: with and without weights (zeros among them,
			// which are skipped), edge values in the signal and normals.
			wts := edgy(seed+18, n, 0, 1)
			for i := range wts {
				if i%3 == 0 {
					wts[i] = 0
				}
			}
			for _, m := range [][]float32{nil, wts} {
				var v, sc [54]float64
				if !SHNormalSIMD(&v, s, nx, ny, nz, m) {
					t.Fatal("shNormalSIMD did nothing with AVX2")
				}
				SHNormalRows(&sc, s, nx, ny, nz, m)
				for k := range v {
					if a, b := v[k], sc[k]; math.Float64bits(a) != math.Float64bits(b) && !(a != a && b != b) {
						t.Fatalf("shNormalSIMD (weights %v): entry %d: vector %v, scalar %v", m != nil, k, a, b)
					}
				}
			}
		})
	}
}

// TestDotsMatchScalar checks Dots' vector loop against its scalar loop bit
// for bit (lengths with and without a tail), and both against float64.
func TestDotsMatchScalar(t *testing.T) {
	rng := newRNG(7)
	for _, c := range []int{1, 7, 8, 16, 19, 512} {
		q := randVals(rng, c, -1, 1)
		keys := randVals(rng, 5*c, -1, 1)
		v, s := make([]float32, 5), make([]float32, 5)
		Dots(v, q, keys)
		withScalar(func() { Dots(s, q, keys) })
		sameBits(t, fmt.Sprintf("Dots of %d", c), v, s)
		for e := range v {
			var want float64
			for i := 0; i < c; i++ {
				want += float64(q[i]) * float64(keys[e*c+i])
			}
			if math.Abs(float64(v[e])-want) > 1e-4*float64(c) {
				t.Errorf("Dots of %d, row %d: %v, want %v", c, e, v[e], want)
			}
		}
	}
}

// BenchmarkDots is one query of select's memory read: 1024 remembered
// cells of 512 features (matte/memory.go).
func BenchmarkDots(b *testing.B) {
	rng := newRNG(3)
	const c, n = 512, 1024
	q, keys, out := randVals(rng, c, -1, 1), randVals(rng, n*c, -1, 1), make([]float32, n)
	b.SetBytes(n * c * 4)
	for b.Loop() {
		Dots(out, q, keys)
	}
}

// TestAreaYUV4RowSIMD checks AreaYUV4Row's AVX-512 loop bit for bit
// against the scalar loop (the EOTF table's lookups), for both matrices
// and ranges, at widths of whole 16-output blocks and with tails, on
// random codes, on the extreme codes and on strides wider than the rows.
func TestAreaYUV4RowSIMD(t *testing.T) {
	if !simdOn || !vbmiOn {
		t.Skip("no AVX-512 VBMI here: AreaYUV4Row runs its scalar loop only")
	}
	lt := NewLUTs()
	rng := newRNG(33)
	for _, ow := range []int{16, 17, 34, 47, 480} {
		for _, fill := range []string{"random", "0", "255", "alternate"} {
			w, h := 4*ow, 8
			f := &frame.HostFrame{Format: frame.YUV420P, Width: w, Height: h, Strides: [3]int{w + 32, w/2 + 16, w/2 + 16}}
			for p := range 3 {
				ph := h
				if p > 0 {
					ph = h / 2
				}
				f.Planes[p] = make([]byte, f.Strides[p]*ph)
				for i := range f.Planes[p] {
					switch fill {
					case "random":
						f.Planes[p][i] = byte(rng.IntN(256))
					case "0":
					case "255":
						f.Planes[p][i] = 255
					default:
						f.Planes[p][i] = byte(255 * ((i + p) % 2))
					}
				}
			}
			for cs := range 2 {
				for full := range 2 {
					tb := &lt.YUVIn[cs][full]
					for y := range h / 4 {
						var got, want [3][]float32
						for c := range 3 {
							got[c], want[c] = make([]float32, ow), make([]float32, ow)
						}
						AreaYUV4Row(got[0], got[1], got[2], f, y, tb, &lt.EOTFExt)
						withScalar(func() { AreaYUV4Row(want[0], want[1], want[2], f, y, tb, &lt.EOTFExt) })
						for c := range 3 {
							for x := range ow {
								if math.Float32bits(got[c][x]) != math.Float32bits(want[c][x]) {
									t.Fatalf("width %d %s cs %d full %d row %d channel %d x %d: %g, scalar %g",
										ow, fill, cs, full, y, c, x, got[c][x], want[c][x])
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestYUVRowSIMD checks YUVRow's AVX-512 loop bit for bit against the
// scalar loop, for both matrices and ranges, at widths around its 64-pixel
// blocks (odd ones included) and with chroma rows longer than needed.
func TestYUVRowSIMD(t *testing.T) {
	if !simdOn || !vbmiOn {
		t.Skip("no AVX-512 VBMI here: YUVRow runs its scalar loop only")
	}
	lt := NewLUTs()
	rng := newRNG(34)
	for _, w := range []int{63, 64, 65, 127, 128, 130, 1920, 1921} {
		cw := (w + 1) / 2
		yr, ur, vr := make([]byte, w), make([]byte, cw+5), make([]byte, cw+5)
		for _, b := range [][]byte{yr, ur, vr} {
			for i := range b {
				b[i] = byte(rng.IntN(256))
			}
		}
		yr[0], ur[0], vr[0] = 0, 255, 0 // the extreme sums
		yr[1], ur[1], vr[1] = 255, 0, 255
		for cs := range 2 {
			for full := range 2 {
				tb := &lt.YUVIn[cs][full]
				var got, want [3][]float32
				for c := range 3 {
					got[c], want[c] = make([]float32, w), make([]float32, w)
				}
				YUVRow(got[0], got[1], got[2], yr, ur[:cw], vr[:cw], tb, &lt.EOTFExt)
				withScalar(func() { YUVRow(want[0], want[1], want[2], yr, ur[:cw], vr[:cw], tb, &lt.EOTFExt) })
				for c := range 3 {
					for x := range w {
						if math.Float32bits(got[c][x]) != math.Float32bits(want[c][x]) {
							t.Fatalf("width %d cs %d full %d channel %d x %d: %g, scalar %g", w, cs, full, c, x, got[c][x], want[c][x])
						}
					}
				}
			}
		}
	}
}

// BenchmarkYUVRow1080 is one 1080p row of YUV420P to linear RGB, with the
// AVX-512 loop (where the CPU has it) and with the scalar loop (the
// table).
func BenchmarkYUVRow1080(b *testing.B) {
	lt := NewLUTs()
	rng := newRNG(35)
	yr, ur, vr := make([]byte, 1920), make([]byte, 960), make([]byte, 960)
	for _, s := range [][]byte{yr, ur, vr} {
		for i := range s {
			s[i] = byte(rng.IntN(256))
		}
	}
	r, g, bl := make([]float32, 1920), make([]float32, 1920), make([]float32, 1920)
	tb := &lt.YUVIn[1][0]
	b.Run("vector", func(b *testing.B) {
		for b.Loop() {
			YUVRow(r, g, bl, yr, ur, vr, tb, &lt.EOTFExt)
		}
	})
	b.Run("scalar", func(b *testing.B) {
		withScalar(func() {
			for b.Loop() {
				YUVRow(r, g, bl, yr, ur, vr, tb, &lt.EOTFExt)
			}
		})
	})
}

// TestYUVOutRowsSIMD checks YUVOutRows' vector loop against its scalar
// loop (the OETF table) bit for bit: both matrices and ranges, widths
// around the vector's 32 columns, odd widths, a chroma row shorter than
// the pixels', and values spread over every octave, below 0, above 1,
// infinities and NaN.
func TestYUVOutRowsSIMD(t *testing.T) {
	if !simdOn || !vbmiOn {
		t.Skip("no AVX-512 VBMI here: YUVOutRows runs its scalar loop only")
	}
	lt := NewLUTs()
	rng := newRNG(36)
	special := []float32{0, 1, -0.0, -1, 2, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		0.0031308, 0.003, 0.0032, 1e-30, 1e-40, math.Nextafter32(1, 0), math.Nextafter32(1, 2), 0.5}
	for _, w := range []int{31, 32, 33, 63, 64, 66, 1920, 1921} {
		cw := (w + 1) / 2
		for _, short := range []int{0, 17} {
			var in [6][]float32
			for c := range in {
				in[c] = make([]float32, w)
				for x := range in[c] {
					switch rng.IntN(4) {
					case 0:
						in[c][x] = special[rng.IntN(len(special))]
					case 1:
						in[c][x] = float32(rng.Float64()) // linear, mostly bright
					default:
						in[c][x] = float32(math.Exp2(-20 * rng.Float64())) // every octave down to 2^-20
					}
				}
			}
			ncw := max(0, cw-short)
			for cs := range 2 {
				for full := range 2 {
					k := &lt.YUVOut[cs][full]
					var got, want [4][]byte
					for i := range got {
						n := w
						if i >= 2 {
							n = ncw
						}
						got[i], want[i] = make([]byte, n), make([]byte, n)
					}
					YUVOutRows(k, &lt.OETFU, got[0], got[1], got[2], got[3], in[0], in[1], in[2], in[3], in[4], in[5])
					withScalar(func() {
						YUVOutRows(k, &lt.OETFU, want[0], want[1], want[2], want[3], in[0], in[1], in[2], in[3], in[4], in[5])
					})
					for i := range got {
						for x := range got[i] {
							if got[i][x] != want[i][x] {
								t.Fatalf("width %d chroma %d cs %d full %d plane %d x %d: %d, scalar %d", w, ncw, cs, full, i, x, got[i][x], want[i][x])
							}
						}
					}
				}
			}
		}
	}
}

// BenchmarkYUVOutRows1080 is one 1080p row pair of linear RGB to YUV420P
// codes, with the AVX-512 loop (where the CPU has it) and with the scalar
// loop (the table).
func BenchmarkYUVOutRows1080(b *testing.B) {
	lt := NewLUTs()
	rng := newRNG(37)
	var in [6][]float32
	for c := range in {
		in[c] = make([]float32, 1920)
		for x := range in[c] {
			in[c][x] = float32(math.Exp2(-8 * rng.Float64()))
		}
	}
	ya, yb, u, v := make([]byte, 1920), make([]byte, 1920), make([]byte, 960), make([]byte, 960)
	k := &lt.YUVOut[1][0]
	run := func(b *testing.B) {
		for b.Loop() {
			YUVOutRows(k, &lt.OETFU, ya, yb, u, v, in[0], in[1], in[2], in[3], in[4], in[5])
		}
	}
	b.Run("vector", run)
	b.Run("scalar", func(b *testing.B) { withScalar(func() { run(b) }) })
}
