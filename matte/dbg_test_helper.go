package matte

import (
	"fmt"
	"os"
)

func dbgPGM(name string, v []float64, w, h int, lo, hi float64) {
	if os.Getenv("VFXDBG") == "" {
		return
	}
	f, _ := os.Create("/tmp/xc_" + name + ".pgm")
	defer f.Close()
	fmt.Fprintf(f, "P5\n%d %d\n255\n", w, h)
	b := make([]byte, w*h)
	for i := range b {
		x := (v[i] - lo) / (hi - lo)
		b[i] = byte(255 * max(0, min(1, x)))
	}
	f.Write(b)
}

func dbgf(format string, a ...any) {
	if os.Getenv("VFXDBG") != "" {
		fmt.Fprintf(os.Stderr, format+"\n", a...)
	}
}
