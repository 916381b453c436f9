package srgb

// The curve replaced five copies: kernels/cpu_convert.go (srgbEOTF,
// srgbOETF), matte/auto.go (srgbToLinear, float64), render/prompt.go
// (srgbToLinear, linearToSRGB, float32), bench/matterun.go (srgbLinear,
// float32) and bench/look.go (srgbEncode, float64). The commit that added
// this package compared them to it bit for bit, side by side, on the sweep
// below; oldDigest is the old copies' digest of that sweep, so the copies
// need not be kept here.

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"testing"
)

// oldDigest is sweepDigest of the replaced copies.
const oldDigest = "d1680fe92e1e190ee480e8c4c375841e904271c8235fbf6b9420dcc0ec1b813d"

// sweepDigest hashes every result, bit for bit, of the two curves in both
// precisions on: every 8-bit code (code/255), a dense sweep of
// [-0.01, 1.01] (2^20 steps), and the 4096 float32 values on each side of
// both thresholds.
func sweepDigest(e64, o64 func(float64) float64, e32, o32 func(float32) float32) string {
	h := sha256.New()
	var b [8]byte
	put64 := func(v float64) { binary.LittleEndian.PutUint64(b[:], math.Float64bits(v)); h.Write(b[:]) }
	put32 := func(v float32) { binary.LittleEndian.PutUint32(b[:4], math.Float32bits(v)); h.Write(b[:4]) }
	for i := 0; i < 256; i++ {
		put64(e64(float64(i) / 255))
		put64(o64(float64(i) / 255))
		put32(e32(float32(i) / 255))
		put32(o32(float32(i) / 255))
	}
	const n = 1 << 20
	for i := 0; i <= n; i++ {
		v := -0.01 + 1.02*float64(i)/n
		put64(e64(v))
		put64(o64(v))
		put32(e32(float32(v)))
		put32(o32(float32(v)))
	}
	for _, thr := range []float32{0.04045, 0.0031308} {
		tb := math.Float32bits(thr)
		for d := uint32(0); d < 4096; d++ {
			for _, v := range []float32{math.Float32frombits(tb - d), math.Float32frombits(tb + d)} {
				put32(e32(v))
				put32(o32(v))
				put64(e64(float64(v)))
				put64(o64(float64(v)))
			}
		}
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// TestSameAsReplacedCopies: the shared curve gives, to the bit, what the
// copies it replaced gave.
func TestSameAsReplacedCopies(t *testing.T) {
	if got := sweepDigest(ToLinear, FromLinear, ToLinear32, FromLinear32); got != oldDigest {
		t.Fatalf("digest %s, the replaced copies gave %s", got, oldDigest)
	}
}

// TestCodes: the 8-bit codes the callers' tables derive round-trip.
func TestCodes(t *testing.T) {
	for i := 0; i < 256; i++ {
		v := float32(i) / 255
		if c := uint8(FromLinear32(ToLinear32(v))*255 + 0.5); c != uint8(i) {
			t.Fatalf("code %d round-trips to %d", i, c)
		}
		if c := math.Round(255 * FromLinear(ToLinear(float64(i)/255))); c != float64(i) {
			t.Fatalf("code %d round-trips to %v", i, c)
		}
	}
}
