package rows

import (
	"math"
	"testing"
)

// TestGray8RowMatchesTable checks Gray8Row against GrayRow through the
// Gray8 table bit for bit: every code, at every length that leaves each
// tail of the vector loop (and its 16-byte loads), from every start
// offset of a longer row, and with the row's bytes past len(o) left
// untouched in o.
func TestGray8RowMatchesTable(t *testing.T) {
	lut := &NewLUTs().Gray8
	for c := range 256 {
		if got, want := float32(c)/255, lut[c]; math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("code %d: %v/255 = %v, table %v", c, c, got, want)
		}
	}
	rng := newRNG(33)
	src := make([]byte, 600)
	for i := range src {
		src[i] = byte(i) // every code, then random ones
		if i >= 256 {
			src[i] = byte(rng.IntN(256))
		}
	}
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 32, 33, 255, 256, 257, 480, 599} {
		for off := range 4 {
			if off+n > len(src) {
				continue
			}
			s := src[off : off+n]
			want := make([]float32, n+1)
			got := make([]float32, n+1)
			want[n], got[n] = -1, -1
			GrayRow(want[:n], s, lut)
			Gray8Row(got[:n], s)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("n %d off %d: value %d = %v, want %v", n, off, i, got[i], want[i])
				}
			}
		}
	}
}

// BenchmarkGrayRow1080 and BenchmarkGray8Row1080 convert one 1920-code
// matte row through the table and through Gray8Row.
func BenchmarkGrayRow1080(b *testing.B) {
	lut, s, o := &NewLUTs().Gray8, gray8Bench(), make([]float32, 1920)
	for b.Loop() {
		GrayRow(o, s, lut)
	}
}

func BenchmarkGray8Row1080(b *testing.B) {
	s, o := gray8Bench(), make([]float32, 1920)
	for b.Loop() {
		Gray8Row(o, s)
	}
}

func gray8Bench() []byte {
	rng := newRNG(7)
	s := make([]byte, 1920)
	for i := range s {
		s[i] = byte(rng.IntN(256))
	}
	return s
}
