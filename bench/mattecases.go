package bench

import (
	"math"
	"math/rand/v2"
)

// MatteCase is one synthetic sequence of the matte quality suite: a
// textured subject over a textured background with an exact matte.
type MatteCase struct {
	Name         string
	W, H, Frames int
	Seed         uint64
	Motion       string  // "translate", "rotate", "deform", "leave", "still"
	Pan          float64 // camera pan over the clip, in widths
	Light        float64 // brightness change over the clip (0.4 = ends 40% darker)
	Occluder     bool    // a bar in front of the subject
	Thin         bool    // thin antennae on the subject
	Screen       bool    // a green screen instead of the background
	phase        [8]float64
	palette      [4][3]float64
}

// MatteSuite returns the select suite at w x h with n frames: each case
// stresses one thing.
func MatteSuite(w, h, n int) []*MatteCase {
	cs := []*MatteCase{
		{Name: "translate", Motion: "translate"},
		{Name: "rotate", Motion: "rotate"},
		{Name: "deform", Motion: "deform"},
		{Name: "occlusion", Motion: "translate", Occluder: true},
		{Name: "pan", Motion: "translate", Pan: 0.25},
		{Name: "lighting", Motion: "translate", Light: 0.4},
		{Name: "leave-reenter", Motion: "leave"},
		{Name: "thin", Motion: "rotate", Thin: true},
	}
	for i, c := range cs {
		c.W, c.H, c.Frames, c.Seed = w, h, n, uint64(i+1)
		c.init()
	}
	return cs
}

// AutoSuite returns the auto cases: a chroma screen, a static camera and
// one for the centre prior (a panning camera).
func AutoSuite(w, h, n int) []*MatteCase {
	cs := []*MatteCase{
		{Name: "chroma", Motion: "translate", Screen: true},
		{Name: "static", Motion: "translate"},
		{Name: "centre-prior", Motion: "deform", Pan: 0.2},
	}
	for i, c := range cs {
		c.W, c.H, c.Frames, c.Seed = w, h, n, uint64(i+101)
		c.init()
	}
	return cs
}

func (c *MatteCase) init() {
	r := rand.New(rand.NewPCG(c.Seed, 0x51ed27))
	for i := range c.phase {
		c.phase[i] = r.Float64() * 2 * math.Pi
	}
	// Background: cool and neutral tones; subject: warm tones.
	c.palette[0] = [3]float64{0.25 + 0.1*r.Float64(), 0.40 + 0.1*r.Float64(), 0.50 + 0.1*r.Float64()}
	c.palette[1] = [3]float64{0.55, 0.58, 0.52}
	c.palette[2] = [3]float64{0.80, 0.52 + 0.08*r.Float64(), 0.35}
	c.palette[3] = [3]float64{0.55, 0.30, 0.22 + 0.06*r.Float64()}
}

// pose returns the subject's centre, rotation and radius at frame i.
func (c *MatteCase) pose(i int) (cx, cy, rot, rad, t float64) {
	if c.Frames > 1 {
		t = float64(i) / float64(c.Frames-1)
	}
	w, h := float64(c.W), float64(c.H)
	rad = 0.2 * math.Min(w, h)
	cx, cy = w*(0.35+0.3*t), h*(0.55+0.05*math.Sin(2*math.Pi*t+c.phase[0]))
	switch c.Motion {
	case "rotate":
		cx = w * (0.45 + 0.1*t)
		rot = 1.2 * math.Sin(math.Pi*t)
	case "leave":
		// Out through the right edge by the middle, back by the end.
		cx = w * (0.5 + 0.75*math.Sin(math.Pi*t))
	case "still":
		cx = w * 0.5
	}
	return
}

// sdf is the signed distance (pixels, negative inside) of the subject at
// frame i: a body ellipse and a head circle, optionally deformed and
// with antennae.
func (c *MatteCase) sdf(i int, x, y float64) float64 {
	cx, cy, rot, rad, t := c.pose(i)
	dx, dy := x-cx, y-cy
	cr, sr := math.Cos(rot), math.Sin(rot)
	lx, ly := cr*dx+sr*dy, -sr*dx+cr*dy
	if c.Motion == "deform" {
		ang := math.Atan2(ly, lx)
		s := 1 + 0.15*math.Sin(3*ang+2*math.Pi*2*t+c.phase[1])
		lx, ly = lx/s, ly/s
	}
	ell := func(px, py, ax, ay float64) float64 {
		q := math.Hypot(px/ax, py/ay)
		return (q - 1) * math.Min(ax, ay)
	}
	d := math.Min(ell(lx, ly-0.3*rad, 0.7*rad, 0.95*rad), ell(lx, ly+0.95*rad, 0.4*rad, 0.4*rad))
	if c.Thin {
		th := math.Max(2.5, 0.012*math.Min(float64(c.W), float64(c.H)))
		for _, sgn := range []float64{-1, 1} {
			// A segment from the head outwards.
			ax, ay := sgn*0.25*rad, -1.2*rad
			bx, by := sgn*0.8*rad, -2.0*rad
			vx, vy := bx-ax, by-ay
			u := math.Max(0, math.Min(1, ((lx-ax)*vx+(ly-ay)*vy)/(vx*vx+vy*vy)))
			d = math.Min(d, math.Hypot(lx-ax-u*vx, ly-ay-u*vy)-th/2)
		}
	}
	return d
}

func mix3(a, b [3]float64, t float64) [3]float64 {
	return [3]float64{a[0] + (b[0]-a[0])*t, a[1] + (b[1]-a[1])*t, a[2] + (b[2]-a[2])*t}
}

// Pixel returns the sRGB colour and the exact matte of pixel (x, y) at
// frame i.
func (c *MatteCase) Pixel(i, x, y int) (col [3]float64, a float64) {
	fx, fy := float64(x)+0.5, float64(y)+0.5
	cx, cy, rot, rad, t := c.pose(i)
	light := 1 - c.Light*t
	// Background in world coordinates (the camera pans right).
	u := fx + c.Pan*t*float64(c.W)
	var bg [3]float64
	if c.Screen {
		g := 0.03 * math.Sin(fy/37+c.phase[2])
		bg = [3]float64{0.12, 0.62 + g, 0.22}
	} else {
		s1 := 0.5 + 0.5*math.Sin(u/23+c.phase[2])*math.Sin(fy/17+c.phase[3])
		s2 := 0.5 + 0.5*math.Sin((u+fy)/41+c.phase[4])
		bg = mix3(c.palette[0], c.palette[1], s1)
		if (int(u/32)+int(fy/32))%2 == 0 {
			bg = mix3(bg, [3]float64{0.2, 0.22, 0.25}, 0.35)
		}
		bg = mix3(bg, c.palette[3], 0.25*s2) // a little warm in the background too
	}
	col = bg
	d := c.sdf(i, fx, fy)
	a = math.Max(0, math.Min(1, 0.5-d))
	if a > 0 {
		dx, dy := fx-cx, fy-cy
		cr, sr := math.Cos(rot), math.Sin(rot)
		lx, ly := (cr*dx+sr*dy)/rad, (-sr*dx+cr*dy)/rad
		tex := 0.5 + 0.5*math.Sin(9*lx+c.phase[5])*math.Sin(11*ly+c.phase[6])
		fg := mix3(c.palette[2], c.palette[3], tex)
		if (int((lx+4)*5)+int((ly+4)*5))%2 == 0 {
			fg = mix3(fg, [3]float64{0.95, 0.85, 0.7}, 0.3)
		}
		shade := 0.75 + 0.25*math.Max(-1, math.Min(1, -0.5*lx-0.6*ly))
		for k := range fg {
			fg[k] *= shade
		}
		if c.Screen { // green spill on the subject's edge
			fg[1] += 0.08 * (1 - math.Min(1, -d/6))
		}
		col = mix3(bg, fg, a)
	}
	if c.Occluder {
		// A textured grey post in front, crossing the subject's path.
		ox := 0.55 * float64(c.W)
		wd := 0.05 * float64(c.W)
		oc := math.Max(0, math.Min(1, 0.5-(math.Abs(fx-ox)-wd/2)))
		if oc > 0 {
			st := 0.5 + 0.5*math.Sin(fy/5)
			col = mix3(col, [3]float64{0.35 + 0.1*st, 0.36 + 0.1*st, 0.38 + 0.1*st}, oc)
			a *= 1 - oc
		}
	}
	for k := range col {
		col[k] = math.Max(0, math.Min(1, col[k]*light))
	}
	return col, a
}

// Render writes frame i as planar sRGB values (3*W*H) and its matte
// (W*H).
func (c *MatteCase) Render(i int, rgb, alpha []float32) {
	n := c.W * c.H
	for y := 0; y < c.H; y++ {
		for x := 0; x < c.W; x++ {
			col, a := c.Pixel(i, x, y)
			p := y*c.W + x
			rgb[p], rgb[n+p], rgb[2*n+p] = float32(col[0]), float32(col[1]), float32(col[2])
			alpha[p] = float32(a)
		}
	}
}
