package rows

import (
	"github.com/vfxrender/vfx/internal/srgb"
	"math"
	"testing"

	"github.com/vfxrender/vfx/frame"
)

func TestFastLogExp(t *testing.T) {
	fastLog := func(x float64) float64 { v := []float64{x}; fastLogs(v); return v[0] }
	fastExp := func(x float64) float64 { v := []float64{x}; FastExps(v); return v[0] }
	rng := newRNG(60)
	worstLog, worstExp := 0.0, 0.0
	for i := range 200000 {
		// Log over [1e-4, 1e6], log-uniform, plus exact powers of two.
		x := math.Exp(math.Log(1e-4) + rng.Float64()*(math.Log(1e6)-math.Log(1e-4)))
		if i < 64 {
			x = math.Ldexp(1, i-14)
		}
		worstLog = max(worstLog, math.Abs(fastLog(x)-math.Log(x)))
		y := -700 + 1400*rng.Float64()
		if i < 40 {
			y = float64(i-20) * 0.6931471805599453 / 32 // table knots
		}
		worstExp = max(worstExp, math.Abs(fastExp(y)-math.Exp(y))/math.Exp(y))
	}
	if worstLog > 1e-12 {
		t.Errorf("fastLog abs error %g > 1e-12", worstLog)
	}
	if worstExp > 1e-11 {
		t.Errorf("fastExp rel error %g > 1e-11", worstExp)
	}
	t.Logf("fastLog max abs error %.3g, fastExp max rel error %.3g", worstLog, worstExp)
	// Clamped and odd inputs never panic.
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1e300, -1e300, 0, -1} {
		_ = fastExp(v)
		_ = fastLog(v)
	}
}

// TestConversionTableInvariants checks the facts the conversion code
// relies on instead of clamping at run time.
func TestConversionTableInvariants(t *testing.T) {
	lt := NewLUTs()
	// Every Y'CbCr sum indexes inside the extended EOTF table, with R'
	// outside [0,1] clamped.
	for cs := range 2 {
		for full := range 2 {
			tb := &lt.YUVIn[cs][full]
			lo, hi := int32(math.MaxInt32), int32(math.MinInt32)
			for _, c := range [][256]int32{tb.RV, tb.BU} {
				for y := range 256 {
					for v := range 256 {
						s := (tb.Y[y] + c[v]) >> yuvFrac
						lo, hi = min(lo, s), max(hi, s)
					}
				}
			}
			for y := range 256 {
				for u := range 256 {
					for v := range 256 {
						s := (tb.Y[y] + tb.GU[u] + tb.GV[v]) >> yuvFrac
						lo, hi = min(lo, s), max(hi, s)
					}
				}
			}
			if lo < 0 || hi >= eotfExtSize {
				t.Errorf("%v full=%d: index range [%d, %d] outside the table", frame.ColorSpace(cs), full, lo, hi)
			}
		}
	}
	if lt.EOTFExt[0] != 0 || lt.EOTFExt[eotfExtOff] != 0 || lt.EOTFExt[eotfExtOff+eotfFixN] != 1 || lt.EOTFExt[eotfExtSize-1] != 1 {
		t.Error("extended EOTF table ends are not clamped")
	}
	// An OETF bucket never holds two code thresholds.
	for k := range obN - 1 {
		top := math.Float32frombits(uint32((k+1)<<obShift - 1))
		c := lt.CodeB[k]
		n := 0
		for c+uint8(n) < 255 && top >= lt.CodeThr[c+uint8(n)] {
			n++
		}
		if n > 1 {
			t.Fatalf("bucket %d holds %d thresholds", k, n)
		}
	}
	// Bucket values are within 2.5e-4 of the exact OETF over the bucket.
	worst := 0.0
	for k := 1; k < obN-1; k++ {
		for _, off := range []int{0, 1 << (obShift - 1), 1<<obShift - 1} {
			v := math.Float32frombits(uint32(k<<obShift + off))
			worst = max(worst, math.Abs(float64(lt.OETFB[k])-refOETF(float64(v))))
		}
	}
	if worst > 2.5e-4 {
		t.Errorf("OETF bucket error %g > 2.5e-4", worst)
	}
}

// TestEOTFPoly checks the extended EOTF table's piecewise cubic: within
// 1e-7 (about 1.5 float32 steps near 1) of the exact sRGB EOTF at every
// index, monotonic, exactly 0 at
// R' = 0 and 1 at R' = 1, and each table entry is the cubic's value.
func TestEOTFPoly(t *testing.T) {
	lt := NewLUTs()
	worst, at, ulps := 0.0, 0, 0.0
	prev := float32(-1)
	for j := range int32(eotfFixN + 1) {
		v := lt.eotfPoly.at(j)
		if v < prev {
			t.Fatalf("not monotonic at j %d: %g after %g", j, v, prev)
		}
		prev = v
		x := srgb.ToLinear(float64(j) / eotfFixN)
		e := math.Abs(float64(v) - x)
		if e > worst {
			worst, at = e, int(j)
		}
		if x > 0 {
			step := float64(math.Nextafter32(float32(x), 2) - float32(x))
			ulps = max(ulps, e/step)
		}
		if lt.EOTFExt[eotfExtOff+j] != v {
			t.Fatalf("table entry %d = %g, the cubic gives %g", j, lt.EOTFExt[eotfExtOff+j], v)
		}
	}
	t.Logf("worst error %.3g at j %d; at most %.2f float32 steps", worst, at, ulps)
	if worst > 1e-7 {
		t.Errorf("worst error %.3g (at j %d) > 1e-7", worst, at)
	}
	if lt.eotfPoly.at(0) != 0 || lt.eotfPoly.at(eotfFixN) != 1 {
		t.Errorf("ends %g, %g: want exactly 0 and 1", lt.eotfPoly.at(0), lt.eotfPoly.at(eotfFixN))
	}
	// The vector loop's form of the YUV tables is exact for every code.
	for cs := range 2 {
		for full := range 2 {
			tb := &lt.YUVIn[cs][full]
			v := &tb.vec
			if !v.ok {
				t.Fatalf("%d/%d: a table's correction does not fit in a byte", cs, full)
			}
			for k, tab := range [5]*[256]int32{&tb.Y, &tb.RV, &tb.GU, &tb.GV, &tb.BU} {
				for i, c := range tab {
					if got := int32(i)*v.slope[k] + v.base[k] + int32(v.e[k][i]); got != c {
						t.Fatalf("%d/%d table %d code %d: %d, want %d", cs, full, k, i, got, c)
					}
				}
			}
		}
	}
}

// TestOETFPoly checks the OETF buckets' piecewise definition (oetfPoly)
// against the exact OETF of each bucket's midpoint (what the table held
// before it), its ends, its order, and that the table holds its values.
func TestOETFPoly(t *testing.T) {
	lt := NewLUTs()
	p := lt.YUVOut[0][0].poly
	if p == nil {
		t.Fatal("YUVOut has no oetfPoly")
	}
	worst, at := 0.0, 0
	prev, drops := float32(-1), 0
	for k := range int32(obN) {
		v := p.at(k)
		if lt.OETFB[k] != v {
			t.Fatalf("table entry %d = %g, the definition gives %g", k, lt.OETFB[k], v)
		}
		if v < prev {
			drops++
		}
		prev = v
		if k == obN-1 {
			continue
		}
		e := math.Abs(float64(v) - srgb.FromLinear(float64(oetfMid(k))))
		if e > worst {
			worst, at = e, int(k)
		}
	}
	t.Logf("worst error %.3g at bucket %d (linear %g); %d steps down", worst, at, oetfMid(int32(at)), drops)
	// A code is 1/255 (4e-3): the buckets' own width is up to 2.5e-4.
	if worst > 2e-5 {
		t.Errorf("worst error %.3g (at bucket %d) > 2e-5", worst, at)
	}
	if drops != 0 {
		t.Errorf("%d buckets below the one before", drops)
	}
	// Bucket 0 is the toe's 12.92 times its midpoint, a denormal that
	// moves no code; 1.0's bucket is exactly 1.
	if v := p.at(0); !(v >= 0 && v < 1e-39) || p.at(obN-1) != 1 {
		t.Errorf("ends %g, %g: want about 0 and exactly 1", v, p.at(obN-1))
	}
}
