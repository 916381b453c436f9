// Package backdrop paints the render's background when a job has no
// reference image: a soft picture of the prompt's scene (package prompt).
package backdrop

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/render/colour"
	"github.com/vfxrender/vfx/render/prompt"
)

// The backdrop is painted once per job on the host: a smooth, slightly
// out-of-focus picture built from the prompt's scene, time of day and
// named colours, varied by the seed (horizon height, hot-spot and sun
// position, blob and bokeh placement, tones). It is painted in linear
// light on a low-resolution canvas, upsampled bilinearly in sRGB and
// quantised to RGB24 with a fine triangular grain (about 1 code value),
// which also keeps smooth gradients from banding after 8-bit encoding.

// Canvas is a low-resolution linear RGB picture, interleaved.
type Canvas struct {
	w, h int
	s    float64 // shorter side in pixels: the unit of radii
	pix  []float32
}

func newCanvas(w, h int) *Canvas {
	return &Canvas{w: w, h: h, s: float64(min(w, h)), pix: make([]float32, 3*w*h)}
}

// uv returns the normalised coordinates of pixel (x, y).
func (c *Canvas) uv(x, y int) (float64, float64) {
	return (float64(x) + 0.5) / float64(c.w), (float64(y) + 0.5) / float64(c.h)
}

// paint sets every pixel to f(u, v).
func (c *Canvas) paint(f func(u, v float64) [3]float32) {
	for y := 0; y < c.h; y++ {
		for x := 0; x < c.w; x++ {
			u, v := c.uv(x, y)
			p := f(u, v)
			i := 3 * (y*c.w + x)
			c.pix[i], c.pix[i+1], c.pix[i+2] = p[0], p[1], p[2]
		}
	}
}

// dist returns the distance from pixel (x, y) to (cx, cy) (normalised
// coordinates) in units of the shorter side.
func (c *Canvas) dist(x, y int, cx, cy float64) float64 {
	u, v := c.uv(x, y)
	dx := (u - cx) * float64(c.w) / c.s
	dy := (v - cy) * float64(c.h) / c.s
	return math.Sqrt(dx*dx + dy*dy)
}

// glow adds a Gaussian glow of colour col (linear, already scaled) with
// standard deviation r (shorter-side units) centred at (cx, cy).
func (c *Canvas) glow(cx, cy, r float64, col [3]float32) {
	if !(r > 0) {
		return
	}
	inv := 1 / (2 * r * r)
	for y := 0; y < c.h; y++ {
		for x := 0; x < c.w; x++ {
			d := c.dist(x, y, cx, cy)
			if d > 4*r {
				continue
			}
			g := float32(math.Exp(-d * d * inv))
			i := 3 * (y*c.w + x)
			c.pix[i] += col[0] * g
			c.pix[i+1] += col[1] * g
			c.pix[i+2] += col[2] * g
		}
	}
}

// disc adds an out-of-focus highlight (bokeh): a disc of radius r with a
// soft edge (soft is the fraction of r over which it fades).
func (c *Canvas) disc(cx, cy, r, soft float64, col [3]float32) {
	if !(r > 0) {
		return
	}
	x0 := max(0, int((cx-r*c.s/float64(c.w))*float64(c.w))-2)
	x1 := min(c.w-1, int((cx+r*c.s/float64(c.w))*float64(c.w))+2)
	y0 := max(0, int((cy-r*c.s/float64(c.h))*float64(c.h))-2)
	y1 := min(c.h-1, int((cy+r*c.s/float64(c.h))*float64(c.h))+2)
	inner := r * (1 - soft)
	for y := y0; y <= y1; y++ {
		for x := x0; x <= x1; x++ {
			d := c.dist(x, y, cx, cy)
			if d >= r {
				continue
			}
			g := float32(1 - smoothstep(inner, r, d))
			// Bokeh is a little brighter toward its rim.
			g *= float32(0.85 + 0.15*d/r)
			i := 3 * (y*c.w + x)
			c.pix[i] += col[0] * g
			c.pix[i+1] += col[1] * g
			c.pix[i+2] += col[2] * g
		}
	}
}

// vignette darkens the corners: 1 - amount*smoothstep(0.35, 1.05, rr),
// rr being the distance from the centre over half the diagonal.
func (c *Canvas) vignette(amount float64) {
	hd := math.Hypot(float64(c.w), float64(c.h)) / 2 / c.s
	for y := 0; y < c.h; y++ {
		for x := 0; x < c.w; x++ {
			rr := c.dist(x, y, 0.5, 0.5) / hd
			f := float32(1 - amount*smoothstep(0.35, 1.05, rr))
			i := 3 * (y*c.w + x)
			c.pix[i] *= f
			c.pix[i+1] *= f
			c.pix[i+2] *= f
		}
	}
}

func smoothstep(e0, e1, x float64) float64 {
	if e1 == e0 {
		if x < e0 {
			return 0
		}
		return 1
	}
	t := (x - e0) / (e1 - e0)
	if t <= 0 {
		return 0
	}
	if t >= 1 {
		return 1
	}
	return t * t * (3 - 2*t)
}

func mix3(a, b [3]float32, t float64) [3]float32 {
	tf := float32(math.Min(math.Max(t, 0), 1))
	return [3]float32{a[0] + (b[0]-a[0])*tf, a[1] + (b[1]-a[1])*tf, a[2] + (b[2]-a[2])*tf}
}

func mul3(a, b [3]float32) [3]float32 {
	return [3]float32{a[0] * b[0], a[1] * b[1], a[2] * b[2]}
}

// hex is an sRGB colour 0xRRGGBB in linear light.
func hex(v uint32) [3]float32 {
	return colour.SRGB8ToLinear([3]uint8{uint8(v >> 16), uint8(v >> 8), uint8(v)})
}

// withLum scales c to luminance y.
func withLum(c [3]float32, y float32) [3]float32 {
	return colour.Scale3(colour.NormLum(c), y)
}

// skyColours returns the zenith and horizon colours of the sky at a time of
// day, and the brightness factor of the ground under it.
func skyColours(t prompt.TimeOfDay) (zenith, horizon [3]float32, ground float32) {
	switch t {
	case prompt.TimeSunrise:
		return hex(0x6d86bd), hex(0xf6c3a4), 0.7
	case prompt.TimeGolden:
		return hex(0x5b79ad), hex(0xf3c98a), 0.8
	case prompt.TimeSunset:
		return hex(0x3a3775), hex(0xfa8d52), 0.45
	case prompt.TimeDusk:
		return hex(0x1a2250), hex(0x7a6a9e), 0.22
	case prompt.TimeNight:
		return hex(0x04060e), hex(0x151c36), 0.06
	case prompt.TimeOvercast:
		return hex(0x8e979f), hex(0xc9cdd1), 0.65
	}
	return hex(0x3f7cc9), hex(0xc0d8ee), 1
}

// Synth paints the backdrop for l on a cw x ch canvas (linear
// light). rng drives every choice.
func Synth(l *prompt.Lighting, rng *rand.Rand, cw, ch int) *Canvas {
	c := newCanvas(cw, ch)
	switch l.Scene {
	case prompt.SceneStudio:
		paintStudio(c, l, rng)
	case prompt.SceneInterior:
		paintInterior(c, l, rng)
	case prompt.SceneNeon:
		paintNeon(c, l, rng)
	default:
		paintExterior(c, l, rng)
	}
	return c
}

// keySide is -1 when the strongest light comes from the left, +1 from the
// right, 0 when centred (the sun or window goes on that side).
func keySide(l *prompt.Lighting, rng *rand.Rand) float64 {
	best, side := float32(0), 0.0
	for _, lt := range l.Lights {
		y := colour.Luminance(lt.Color)
		if y > best {
			best = y
			switch {
			case lt.Dir[0] < -0.2:
				side = -1
			case lt.Dir[0] > 0.2:
				side = 1
			default:
				side = 0
			}
		}
	}
	if side == 0 {
		if rng.IntN(2) == 0 {
			return -1
		}
		return 1
	}
	return side
}

func paintStudio(c *Canvas, l *prompt.Lighting, rng *rand.Rand) {
	tones := [][3]float32{hex(0x7a7a7a), hex(0x7d7770), hex(0x6f7780), hex(0x75757a), hex(0x807a74)}
	base := tones[rng.IntN(len(tones))]
	if len(l.Backdrop) > 0 {
		base = colour.Desaturate(l.Backdrop[0], 0.7)
	} else if len(l.Lights) > 0 {
		// The lights spill a little of their colour on a neutral paper.
		var sum [3]float32
		for _, lt := range l.Lights {
			for k := range sum {
				sum[k] += lt.Color[k]
			}
		}
		base = mul3(base, mix3([3]float32{1, 1, 1}, colour.NormLum(sum), 0.3))
	}
	lum := float32(0.13 + 0.08*rng.Float64())
	if len(l.Backdrop) > 0 {
		// A named backdrop colour keeps its own lightness ("white
		// seamless" is light, "black" dark), without blowing out.
		lum = colour.Clamp32(0.8*colour.Luminance(l.Backdrop[0]), 0.01, 0.7)
	}
	switch {
	case l.Intensity > 1.1:
		lum = max(lum, float32(0.45+0.2*rng.Float64()))
	case l.Intensity < 0.9:
		lum = min(lum, float32(0.025+0.025*rng.Float64()))
	}
	if l.Temperature != 0 {
		base = mul3(base, colour.KelvinTint(l.Temperature, 0.3))
	}
	base = withLum(base, lum)
	floor := withLum(base, lum*0.7)
	hv := 0.7 + 0.1*rng.Float64()
	c.paint(func(u, v float64) [3]float32 {
		wall := colour.Scale3(base, float32(0.8+0.2*smoothstep(0, 0.65, v)))
		return mix3(wall, floor, smoothstep(hv-0.08, hv+0.12, v))
	})
	hx, hy := 0.5+0.18*(rng.Float64()-0.5), 0.42+0.1*(rng.Float64()-0.5)
	hot := float32(0.7 + 0.5*rng.Float64())
	if l.Intensity > 1.1 {
		hot *= 0.4
	}
	hot = max(0, min(hot, 0.95/lum-1)) // a light paper must not burn out
	c.glow(hx, hy, 0.35+0.15*rng.Float64(), colour.Scale3(base, hot))
	if len(l.Backdrop) > 1 {
		side := 0.0
		if rng.IntN(2) == 1 {
			side = 1
		}
		c.glow(side, 0.3+0.3*rng.Float64(), 0.45, withLum(l.Backdrop[1], lum*1.1))
	}
	c.vignette(0.45 + 0.15*rng.Float64())
}

func paintInterior(c *Canvas, l *prompt.Lighting, rng *rand.Rand) {
	wall := hex(0xb3a088)
	if len(l.Backdrop) > 0 {
		wall = mix3(wall, l.Backdrop[0], 0.5)
	}
	zen, hor, gf := skyColours(l.Time)
	wallLum := float32(0.18+0.06*rng.Float64()) * max(gf, 0.25)
	wall = withLum(wall, wallLum)
	floor := withLum(hex(0x6b5140), wallLum*0.6)
	hv := 0.72 + 0.08*rng.Float64()
	c.paint(func(u, v float64) [3]float32 {
		return mix3(wall, floor, smoothstep(hv-0.03, hv+0.05, v))
	})
	// A bright window on the key's side, soft-edged.
	side := keySide(l, rng)
	wx := 0.5 + side*(0.3+0.1*rng.Float64())
	sky := mix3(zen, hor, 0.6)
	winLum := float32(0.9) * max(gf, 0.05)
	for y := 0; y < c.h; y++ {
		for x := 0; x < c.w; x++ {
			u, v := c.uv(x, y)
			wgt := (1 - smoothstep(0.08, 0.2, math.Abs(u-wx)*float64(c.w)/c.s)) *
				smoothstep(0.04, 0.18, v) * (1 - smoothstep(0.55, 0.7, v))
			if wgt <= 0 {
				continue
			}
			col := withLum(sky, winLum)
			i := 3 * (y*c.w + x)
			for k := 0; k < 3; k++ {
				c.pix[i+k] += (col[k] - c.pix[i+k]) * float32(wgt)
			}
		}
	}
	c.glow(wx, 0.4, 0.35, withLum(sky, winLum*0.25))
	// Warm practical lamps as bokeh.
	n := 2 + rng.IntN(4)
	for i := 0; i < n; i++ {
		col := withLum(colour.KelvinTint(2700, 1), float32(0.25+0.4*rng.Float64()))
		c.disc(0.5-side*(0.1+0.4*rng.Float64()), 0.25+0.4*rng.Float64(), 0.02+0.04*rng.Float64(), 0.35, col)
	}
	c.vignette(0.35)
}

func paintNeon(c *Canvas, l *prompt.Lighting, rng *rand.Rand) {
	cols := [][3]float32{hex(0xe628c8), hex(0x00c8e6), hex(0x7a3cff)}
	if len(l.Palette) > 0 {
		cols = l.Palette
	}
	dark := withLum(hex(0x140c24), 0.006)
	c.paint(func(u, v float64) [3]float32 { return colour.Scale3(dark, float32(0.7+0.6*v)) })
	for i := 0; i < 3+rng.IntN(2); i++ {
		col := withLum(cols[i%len(cols)], float32(0.05+0.06*rng.Float64()))
		c.glow(rng.Float64(), 0.2+0.6*rng.Float64(), 0.25+0.2*rng.Float64(), col)
	}
	// Neon tubes: thin soft horizontal strips.
	for i := 0; i < 2+rng.IntN(3); i++ {
		col := withLum(cols[rng.IntN(len(cols))], float32(0.35+0.3*rng.Float64()))
		y0, x0 := 0.1+0.5*rng.Float64(), rng.Float64()*0.7
		x1 := x0 + 0.15 + 0.3*rng.Float64()
		for y := 0; y < c.h; y++ {
			for x := 0; x < c.w; x++ {
				u, v := c.uv(x, y)
				d := math.Abs(v-y0) * float64(c.h) / c.s
				g := math.Exp(-d*d/(2*0.006*0.006)) + 0.25*math.Exp(-d*d/(2*0.03*0.03))
				g *= smoothstep(x0-0.02, x0+0.01, u) * (1 - smoothstep(x1-0.01, x1+0.02, u))
				if g < 1e-4 {
					continue
				}
				j := 3 * (y*c.w + x)
				for k := 0; k < 3; k++ {
					c.pix[j+k] += col[k] * float32(g)
				}
			}
		}
	}
	bokeh(c, rng, cols, 14+rng.IntN(10), 0.08, 0.35)
	c.vignette(0.5)
}

// bokeh scatters n out-of-focus discs of the given colours with
// luminance about lum.
func bokeh(c *Canvas, rng *rand.Rand, cols [][3]float32, n int, lum, vmax float64) {
	for i := 0; i < n; i++ {
		col := withLum(cols[rng.IntN(len(cols))], float32(lum*(0.4+rng.Float64())))
		c.disc(rng.Float64(), 0.05+vmax*rng.Float64(), 0.015+0.045*rng.Float64(), 0.3, col)
	}
}

// groundColour is the ground of an exterior scene, before the time of
// day's factor.
func groundColour(s prompt.Scene) [3]float32 {
	switch s {
	case prompt.SceneBeach:
		return hex(0xd9c49c)
	case prompt.SceneDesert:
		return hex(0xd09a62)
	case prompt.SceneSnow:
		return hex(0xe9eef5)
	case prompt.SceneForest:
		return hex(0x3f5a2c)
	case prompt.SceneCity:
		return hex(0x55585e)
	default:
		return hex(0x7b9150)
	}
}

// sea paints a band of sea of colour col just under the horizon hv.
func sea(c *Canvas, hv float64, col, hor [3]float32) {
	for y := 0; y < c.h; y++ {
		for x := 0; x < c.w; x++ {
			_, v := c.uv(x, y)
			w := smoothstep(hv-0.005, hv+0.01, v) * (1 - smoothstep(hv+0.08, hv+0.12, v))
			sc := mix3(mix3(col, hor, 0.35), col, (v-hv)/0.12)
			i := 3 * (y*c.w + x)
			for k := 0; k < 3; k++ {
				c.pix[i+k] += (sc[k] - c.pix[i+k]) * float32(w)
			}
		}
	}
}

func paintExterior(c *Canvas, l *prompt.Lighting, rng *rand.Rand) {
	zen, hor, gf := skyColours(l.Time)
	if l.Scene == prompt.SceneSnow {
		zen, hor = mix3(zen, hor, 0.3), mix3(hor, hex(0xeef2f6), 0.4)
	}
	hv := 0.52 + 0.12*rng.Float64()
	ground := colour.Scale3(groundColour(l.Scene), gf)
	groundFar := mix3(ground, hor, 0.45)
	skyLum := float32(1)
	c.paint(func(u, v float64) [3]float32 {
		t := math.Min(v/hv, 1)
		sky := mix3(zen, hor, t*t)
		gr := mix3(groundFar, ground, smoothstep(hv, 1.05, v))
		return colour.Scale3(mix3(sky, gr, smoothstep(hv-0.015, hv+0.02, v)), skyLum)
	})
	side := keySide(l, rng)
	switch l.Time {
	case prompt.TimeSunrise, prompt.TimeGolden, prompt.TimeSunset:
		sx := 0.5 + side*(0.2+0.2*rng.Float64())
		sunCol := hor
		c.glow(sx, hv-0.02, 0.45, colour.Scale3(sunCol, 0.5))
		c.glow(sx, hv-0.04, 0.08, withLum(colour.KelvinTint(2600, 1), 1.2))
		if l.Time == prompt.TimeSunset {
			c.glow(1-sx, hv-0.2, 0.5, withLum(hex(0xe06a8a), 0.08))
		}
	case prompt.TimeDay, prompt.TimeUnspecified:
		c.glow(0.5+side*(0.25+0.2*rng.Float64()), 0.02, 0.3, withLum(hex(0xfff6e0), 0.35))
	case prompt.TimeNight:
		c.glow(0.5+side*0.3, 0.12, 0.02, withLum(hex(0xdfe6ff), 0.5))
		c.glow(0.5+side*0.3, 0.12, 0.12, withLum(hex(0x8090c0), 0.02))
	}
	switch l.Scene {
	case prompt.SceneBeach:
		sea(c, hv, mix3(colour.Scale3(hex(0x2f7396), gf), hor, 0.55), hor)
	case prompt.SceneForest:
		trees(c, rng, hv, colour.Scale3(hex(0x2b4424), gf), colour.Scale3(hex(0x6f8f3a), gf), hor)
	case prompt.SceneCity:
		skyline(c, l, rng, hv, gf)
	case prompt.SceneDesert:
		dunes(c, rng, hv, colour.Scale3(hex(0xb77a45), gf))
	case prompt.SceneExterior, prompt.SceneSnow:
		hills(c, rng, hv, mix3(colour.Scale3(hex(0x5e7a55), gf), hor, 0.5))
	}
	if l.Time == prompt.TimeNight || l.Time == prompt.TimeDusk {
		cols := [][3]float32{colour.KelvinTint(2400, 1), colour.KelvinTint(3000, 1), hex(0xffd9a0)}
		if len(l.Palette) > 0 {
			cols = append(cols, l.Palette...)
		}
		lum := 0.12
		if l.Time == prompt.TimeDusk {
			lum = 0.2
		}
		bokeh(c, rng, cols, 10+rng.IntN(10), lum, hv)
	} else if len(l.Palette) > 0 {
		for i := 0; i < 3+rng.IntN(3); i++ {
			col := withLum(l.Palette[rng.IntN(len(l.Palette))], float32(0.04+0.06*rng.Float64())*gf)
			c.glow(rng.Float64(), rng.Float64()*hv, 0.15+0.15*rng.Float64(), col)
		}
	}
	c.vignette(0.3)
}

// trees paints a soft forest edge: a dark canopy with a wavy top and
// dappled lighter leaves and sky gaps.
func trees(c *Canvas, rng *rand.Rand, hv float64, dark, leaf, sky [3]float32) {
	top := hv - 0.25 - 0.15*rng.Float64()
	ph := [3]float64{rng.Float64() * 6.28, rng.Float64() * 6.28, rng.Float64() * 6.28}
	for y := 0; y < c.h; y++ {
		for x := 0; x < c.w; x++ {
			u, v := c.uv(x, y)
			edge := top + 0.06*math.Sin(u*7+ph[0]) + 0.03*math.Sin(u*17+ph[1]) + 0.015*math.Sin(u*41+ph[2])
			w := smoothstep(edge-0.02, edge+0.03, v) * (1 - smoothstep(hv+0.02, hv+0.1, v))
			if w <= 0 {
				continue
			}
			i := 3 * (y*c.w + x)
			for k := 0; k < 3; k++ {
				c.pix[i+k] += (dark[k] - c.pix[i+k]) * float32(w)
			}
		}
	}
	for i := 0; i < 14+rng.IntN(8); i++ {
		col := colour.Scale3(leaf, float32(0.3+0.5*rng.Float64()))
		if rng.IntN(4) == 0 {
			col = colour.Scale3(sky, float32(0.3+0.3*rng.Float64()))
		}
		c.disc(rng.Float64(), top+(hv-top)*rng.Float64(), 0.02+0.05*rng.Float64(), 0.5, col)
	}
}

// skyline paints soft, out-of-focus buildings above the horizon and, at
// dusk or night, lit windows.
func skyline(c *Canvas, l *prompt.Lighting, rng *rand.Rand, hv float64, gf float32) {
	_, hor, _ := skyColours(l.Time)
	bcol := mix3(colour.Scale3(hex(0x3d4552), max(gf, 0.12)), hor, 0.2)
	x := -0.05
	for x < 1.05 {
		w := 0.06 + 0.12*rng.Float64()
		top := hv - 0.1 - 0.35*rng.Float64()
		shade := float32(0.7 + 0.5*rng.Float64())
		col := colour.Scale3(bcol, shade)
		px0, px1 := max(0, int((x-0.02)*float64(c.w))), min(c.w, int((x+w+0.02)*float64(c.w))+1)
		py0, py1 := max(0, int((top-0.03)*float64(c.h))), min(c.h, int((hv+0.16)*float64(c.h))+1)
		for py := py0; py < py1; py++ {
			for px := px0; px < px1; px++ {
				u, v := c.uv(px, py)
				wgt := smoothstep(x-0.015, x+0.015, u) * (1 - smoothstep(x+w-0.015, x+w+0.015, u)) *
					smoothstep(top-0.025, top+0.025, v) * (1 - smoothstep(hv+0.05, hv+0.15, v))
				if wgt <= 0 {
					continue
				}
				i := 3 * (py*c.w + px)
				for k := 0; k < 3; k++ {
					c.pix[i+k] += (col[k] - c.pix[i+k]) * float32(wgt)
				}
			}
		}
		if l.Time == prompt.TimeNight || l.Time == prompt.TimeDusk {
			for j := 0; j < 3+rng.IntN(5); j++ {
				wc := withLum(colour.KelvinTint(float32(2600+1500*rng.Float64()), 1), float32(0.05+0.1*rng.Float64()))
				c.disc(x+w*rng.Float64(), top+(hv-top)*rng.Float64(), 0.01+0.012*rng.Float64(), 0.5, wc)
			}
		}
		x += w + 0.01*rng.Float64()
	}
}

// dunes paints two soft sine-wave dune ridges below the horizon.
func dunes(c *Canvas, rng *rand.Rand, hv float64, shadow [3]float32) {
	ph := rng.Float64() * 6.28
	for y := 0; y < c.h; y++ {
		for x := 0; x < c.w; x++ {
			u, v := c.uv(x, y)
			ridge := hv + 0.1 + 0.04*math.Sin(u*5+ph) + 0.02*math.Sin(u*11+2*ph)
			w := 0.6 * smoothstep(ridge-0.01, ridge+0.08, v) * (1 - smoothstep(ridge+0.1, ridge+0.3, v))
			if w <= 0 {
				continue
			}
			i := 3 * (y*c.w + x)
			for k := 0; k < 3; k++ {
				c.pix[i+k] += (shadow[k] - c.pix[i+k]) * float32(w)
			}
		}
	}
}

// hills paints a hazy band of distant hills on the horizon.
func hills(c *Canvas, rng *rand.Rand, hv float64, col [3]float32) {
	ph := rng.Float64() * 6.28
	for y := 0; y < c.h; y++ {
		for x := 0; x < c.w; x++ {
			u, v := c.uv(x, y)
			top := hv - 0.04 - 0.04*math.Sin(u*4+ph) - 0.02*math.Sin(u*9+2*ph)
			w := smoothstep(top-0.01, top+0.02, v) * (1 - smoothstep(hv+0.01, hv+0.04, v))
			if w <= 0 {
				continue
			}
			i := 3 * (y*c.w + x)
			for k := 0; k < 3; k++ {
				c.pix[i+k] += (col[k] - c.pix[i+k]) * float32(w)
			}
		}
	}
}

// encodeSRGB encodes linear values as sRGB code values (0..255, not
// rounded) through a table (linear 0..1 in 4096 steps, interpolated),
// with a soft shoulder above 0.8 instead of a hard clip.
func encodeSRGB(pix []float32) []float32 {
	const lutN = 4096
	var lut [lutN + 1]float32
	for i := range lut {
		lut[i] = colour.LinearToSRGB(float32(i)/lutN) * 255
	}
	enc := make([]float32, len(pix))
	for i, v := range pix {
		if v > 0.8 {
			v = 0.8 + 0.2*float32(math.Tanh(float64(v-0.8)/0.2))
		}
		if !(v > 0) {
			v = 0
		}
		p := v * lutN
		j := min(int(p), lutN-1)
		enc[i] = lut[j] + (lut[j+1]-lut[j])*(p-float32(j))
	}
	return enc
}

// tap is a bilinear resize's two source samples and weight.
type tap struct {
	i0, i1 int
	t      float32
}

// bilinearTaps are the taps of a resize from src samples to n.
func bilinearTaps(n, src int) []tap {
	out := make([]tap, n)
	s := float64(src) / float64(n)
	for i := range out {
		p := (float64(i)+0.5)*s - 0.5
		p = math.Min(math.Max(p, 0), float64(src-1))
		i0 := int(p)
		i1 := min(i0+1, src-1)
		out[i] = tap{i0, i1, float32(p - float64(i0))}
	}
	return out
}

// RGB24 upsamples the canvas to a w x h RGB24 frame: bilinear in sRGB
// (pixel centres aligned), plus a triangular grain of about one code value
// from a hash of (x, y, channel, salt).
func (c *Canvas) RGB24(w, h int, salt uint32) (*frame.HostFrame, error) {
	f, err := frame.New(frame.RGB24, w, h)
	if err != nil {
		return nil, err
	}
	enc := encodeSRGB(c.pix)
	tx, ty := bilinearTaps(w, c.w), bilinearTaps(h, c.h)
	rowsInto := func(y0, y1 int) {
		row := make([]float32, 3*c.w)
		for y := y0; y < y1; y++ {
			t := ty[y]
			r0, r1 := enc[3*t.i0*c.w:3*(t.i0+1)*c.w], enc[3*t.i1*c.w:3*(t.i1+1)*c.w]
			for i := range row {
				row[i] = r0[i] + (r1[i]-r0[i])*t.t
			}
			out := f.Planes[0][y*f.Strides[0] : y*f.Strides[0]+3*w]
			for x := 0; x < w; x++ {
				s := tx[x]
				a, b := row[3*s.i0:3*s.i0+3], row[3*s.i1:3*s.i1+3]
				hsh := hash3(uint32(x), uint32(y), salt)
				for k := 0; k < 3; k++ {
					v := a[k] + (b[k]-a[k])*s.t
					// Triangular noise in [-1.25, 1.25] code values.
					n := float32(int32(hsh&0x3ff)+int32((hsh>>10)&0x3ff)-1023) * (1.25 / 1023)
					hsh = hsh>>20 | hsh<<12
					hsh *= 0x9e3779b1
					v += n + 0.5
					switch {
					case v < 0:
						v = 0
					case v > 255:
						v = 255
					}
					out[3*x+k] = uint8(v)
				}
			}
		}
	}
	// Rows are independent (the grain hashes the position), so bands run
	// in parallel with identical results for any split.
	parts := min(runtime.GOMAXPROCS(0), 4, max(1, h/64))
	var wg sync.WaitGroup
	for p := 0; p < parts; p++ {
		wg.Add(1)
		go func(y0, y1 int) {
			defer wg.Done()
			rowsInto(y0, y1)
		}(p*h/parts, (p+1)*h/parts)
	}
	wg.Wait()
	return f, nil
}

// hash3 is a small integer hash (murmur3 finaliser) of a pixel position.
func hash3(x, y, salt uint32) uint32 {
	h := x*0x8da6b343 ^ y*0xd8163841 ^ salt*0xcb1ab31f
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}
