package exr

import (
	"math"
	"testing"
)

// TestEXRChromaticitiesToRec709: the matrix read from ACEScg
// chromaticities undoes the published Rec.709 → ACEScg (Bradford)
// matrix, and Rec.709 needs none.
func TestEXRChromaticitiesToRec709(t *testing.T) {
	if _, id := ToRec709(Rec709); !id {
		t.Error("Rec.709 chromaticities are not read as Rec.709")
	}
	m, id := ToRec709(ACEScg)
	if id {
		t.Fatal("ACEScg read as Rec.709")
	}
	fwd := [3][3]float64{{0.6130974, 0.3395231, 0.0473795}, {0.0701937, 0.9163539, 0.0134524}, {0.0206156, 0.1095698, 0.8698151}}
	p := mul3(m, fwd)
	for r := range 3 {
		for c := range 3 {
			want := 0.0
			if r == c {
				want = 1
			}
			if math.Abs(p[r][c]-want) > 2e-3 {
				t.Fatalf("toRec709(ACEScg) x Rec709→ACEScg = %v, want the identity", p)
			}
		}
	}
}
