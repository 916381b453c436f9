package cpuref

import "github.com/vfxrender/vfx/kernels/rows"
import "math"

// AddGrain adds the subject's grain (see GrainOps.AddGrain).
func (d *CPU) AddGrain(dst, src, alpha Image, seed uint32, amount float32) error {
	const op = "AddGrain"
	o, s, err := pair(op, dst, src)
	if err != nil {
		return err
	}
	a, err := optImg(op, "alpha", alpha)
	if err != nil {
		return err
	}
	if s.c != o.c {
		return shapeErr(op, "src %s, dst %s", dims(s), dims(o))
	}
	if err := wantChannels(op, "alpha", a, 1); err != nil {
		return err
	}
	if err := sameSize(op, o, []string{"alpha"}, a); err != nil {
		return err
	}
	w := o.w
	d.parallel(o.h, BandRows(w), func(_, y0, y1 int) {
		for y := y0; y < y1; y++ {
			key := rows.GrainRowKey(y, seed)
			lo := y * w
			var al []float32
			if a != nil {
				al = a.plane(0)[lo:][:w]
			}
			for x := 0; x < w; x++ {
				av := float32(1)
				if al != nil {
					av = al[x]
				}
				if !(av > 0) {
					continue
				}
				t := float32(float32(av*amount) * rows.GrainFromKey(x, key))
				for c := range o.c {
					sv := s.plane(c)[lo+x]
					sq := float32(0)
					if sv > 0 {
						sq = float32(math.Sqrt(float64(sv)))
					}
					v := float32(sq + t)
					if !(v > 0) {
						v = 0
					}
					o.plane(c)[lo+x] = float32(v * v)
				}
			}
		}
	})
	return nil
}
