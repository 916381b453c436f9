package bytemap

import (
	"math/rand/v2"
	"testing"
)

// withBytes runs f with the vector loop off, then restores it.
func withBytes(f func()) {
	on := vbmiOn
	vbmiOn = false
	defer func() { vbmiOn = on }()
	f()
}

// TestMap checks Map against the table for every code, at lengths around
// the 64-byte blocks, with the vector loop on (where the CPU has it) and
// off.
func TestMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	var tab [256]byte
	for i := range tab {
		tab[i] = byte(rng.IntN(256))
	}
	for _, n := range []int{0, 1, 63, 64, 65, 127, 128, 200, 256, 1920} {
		s := make([]byte, n+3) // longer than o: Map reads len(o) of it
		for i := range s {
			s[i] = byte(i*7 + n) // every code, in order and wrapped
		}
		for _, bytes := range []bool{false, true} {
			o := make([]byte, n)
			if bytes {
				withBytes(func() { Map(o, s, &tab) })
			} else {
				Map(o, s, &tab)
			}
			for i := range o {
				if o[i] != tab[s[i]] {
					t.Fatalf("n %d byte loop %v: byte %d (code %d) = %d, want %d", n, bytes, i, s[i], o[i], tab[s[i]])
				}
			}
		}
	}
	if !vbmiOn {
		t.Log("no AVX-512 VBMI here (or built without GOEXPERIMENT=simd): only the byte loop ran")
	}
}

// BenchmarkMap is a 1080p matte's row through a byte table (the decoder's
// limited-to-full range conversion), with the vector loop (where the CPU
// has it) and without.
func BenchmarkMap(b *testing.B) {
	var tab [256]byte
	s, o := make([]byte, 1920), make([]byte, 1920)
	for i := range tab {
		tab[i] = byte(255 - i)
	}
	for i := range s {
		s[i] = byte(i * 13)
	}
	b.Run("vector", func(b *testing.B) {
		for b.Loop() {
			Map(o, s, &tab)
		}
	})
	b.Run("bytes", func(b *testing.B) {
		withBytes(func() {
			for b.Loop() {
				Map(o, s, &tab)
			}
		})
	})
}
