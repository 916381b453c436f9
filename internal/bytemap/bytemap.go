// Package bytemap maps bytes through a 256-entry byte table, 64 at a time
// where the CPU can: a leaf below codec (whose matte decoder converts a
// limited-range matte's codes through a table read back from swscale),
// which may not import the pixel packages' row loops (kernels/rows).
package bytemap

// Map writes tab[s[x]] into o[x] for each of o's values (s is at least as
// long as o): on amd64 built with GOEXPERIMENT=simd and a CPU with AVX-512
// VBMI, 64 bytes at a time by two two-register byte permutes (entries
// 0-127 and 128-255) and a select on the code's top bit, which give the
// table's own value for every code; byte by byte elsewhere.
func Map(o, s []byte, tab *[256]byte) {
	s = s[:len(o)]
	n := mapSIMD(o, s, tab)
	for x, c := range s[n:] {
		o[n+x] = tab[c]
	}
}
