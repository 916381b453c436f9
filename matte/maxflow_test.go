package matte

import (
	"math"
	"math/rand/v2"
	"testing"
)

// cutCost is the capacity of the cut with source side src.
func cutCost(n int, edges [][4]int, tw [][2]int64, src []bool) int64 {
	var c int64
	for i := 0; i < n; i++ {
		if src[i] {
			c += tw[i][1] // i -> sink cut
		} else {
			c += tw[i][0] // source -> i cut
		}
	}
	for _, e := range edges {
		if src[e[0]] && !src[e[1]] {
			c += int64(e[2])
		}
		if src[e[1]] && !src[e[0]] {
			c += int64(e[3])
		}
	}
	return c
}

func TestMaxflowKnownCut(t *testing.T) {
	// s -> 0 (3), s -> 1 (2), 0 -> 1 (1), 0 -> t (2), 1 -> t (3) plus
	// 1 -> 0 (0): max flow 5, every node saturates a terminal. A chain
	// 2 - 3 with s -> 2 (4), 2 -> 3 (1), 3 -> t (5): flow 1, cut 2|3.
	g := newGraph(4, 2)
	g.addTerminal(0, 3, 2)
	g.addTerminal(1, 2, 3)
	g.addEdge(0, 1, 1, 0)
	g.addTerminal(2, 4, 0)
	g.addTerminal(3, 0, 5)
	g.addEdge(2, 3, 1, 0)
	// addTerminal already counts min(cs, ct) per node: 2 + 2 = 4, then the
	// remaining 1 through 0 -> 1, and 1 through 2 -> 3.
	if f := g.maxflow(); f != 6 {
		t.Fatalf("max flow %d, want 6", f)
	}
	if !g.inSource(2) || g.inSource(3) {
		t.Errorf("chain cut: node 2 source %v, node 3 source %v; want 2|3", g.inSource(2), g.inSource(3))
	}
}

func TestMaxflowBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for trial := 0; trial < 300; trial++ {
		n := 2 + r.IntN(9)
		var edges [][4]int
		tw := make([][2]int64, n)
		g := newGraph(n, n*n)
		for i := 0; i < n; i++ {
			tw[i] = [2]int64{int64(r.IntN(20)), int64(r.IntN(20))}
			if r.IntN(3) == 0 {
				tw[i][r.IntN(2)] = 0
			}
			g.addTerminal(i, tw[i][0], tw[i][1])
		}
		for i := 0; i < n; i++ {
			for j := i + 1; j < n; j++ {
				if r.IntN(2) == 0 {
					continue
				}
				e := [4]int{i, j, r.IntN(15), r.IntN(15)}
				edges = append(edges, e)
				g.addEdge(i, j, int32(e[2]), int32(e[3]))
			}
		}
		best := int64(-1)
		src := make([]bool, n)
		for m := 0; m < 1<<n; m++ {
			for i := range src {
				src[i] = m>>i&1 == 1
			}
			if c := cutCost(n, edges, tw, src); best < 0 || c < best {
				best = c
			}
		}
		f := g.maxflow()
		if f != best {
			t.Fatalf("trial %d (n %d): max flow %d, brute-force min cut %d", trial, n, f, best)
		}
		for i := range src {
			src[i] = g.inSource(i)
		}
		if c := cutCost(n, edges, tw, src); c != best {
			t.Fatalf("trial %d: the returned cut costs %d, min cut %d", trial, c, best)
		}
	}
}

func TestMaxflowGrid(t *testing.T) {
	// A 60x40 grid, strong 4-connected smoothness, terminals that favour
	// the source in a noisy disc: the cut must be the disc (noise removed).
	w, h := 60, 40
	g := newGraph(w*h, 2*w*h)
	r := rand.New(rand.NewPCG(3, 5))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			in := (x-30)*(x-30)+(y-20)*(y-20) < 12*12
			s, tt := int64(10), int64(0)
			if !in {
				s, tt = 0, 10
			}
			if r.IntN(10) == 0 { // 10% flipped pixels
				s, tt = tt, s
			}
			g.addTerminal(y*w+x, s, tt)
			if x+1 < w {
				g.addEdge(y*w+x, y*w+x+1, 8, 8)
			}
			if y+1 < h {
				g.addEdge(y*w+x, (y+1)*w+x, 8, 8)
			}
		}
	}
	g.maxflow()
	wrong := 0
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			in := (x-30)*(x-30)+(y-20)*(y-20) < 12*12
			if g.inSource(y*w+x) != in {
				wrong++
			}
		}
	}
	if wrong > 12 {
		t.Errorf("%d pixels on the wrong side of the cut, want <= 12", wrong)
	}
}

func TestGlobalMotionAndCut(t *testing.T) {
	// A textured 96x64 frame panned by (2, -1) px, with an 24x24 square
	// moving by (-3, 2): the global fit must find the pan (small residual
	// outside the square) and the motion cue plus graph cut the square.
	w, h := 96, 64
	tex := func(x, y float64) float64 {
		return 0.5 + 0.25*math.Sin(x/3.1)*math.Cos(y/2.3) + 0.2*math.Sin((x+2*y)/5.7)
	}
	in := func(x, y int) bool { return x >= 36 && x < 60 && y >= 20 && y < 44 }
	n := w * h
	key, oth := make([]float32, 3*n), make([]float32, 3*n)
	lum := make([]float32, n)
	flow := make([]float32, 2*n)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			p := y*w + x
			u, v := 2.0, -1.0
			if in(x, y) {
				u, v = -3, 2
			}
			flow[p], flow[n+p] = float32(u), float32(v)
			kv := tex(float64(x), float64(y))
			if in(x, y) {
				kv = tex(float64(x)*1.7+40, float64(y)*1.3)
			}
			lum[p] = float32(kv)
			// the other frame: key content moved by the flow (global pan;
			// the square's own motion is irrelevant for the compensated
			// error, which only needs it to differ)
			ov := tex(float64(x)-2, float64(y)+1)
			if in(x, y) {
				ov = tex(float64(x)*1.7+40+5, float64(y)*1.3-3)
			}
			for c := 0; c < 3; c++ {
				key[c*n+p], oth[c*n+p] = float32(kv), float32(ov)
			}
		}
	}
	res, A := globalMotion(flow, ones(n), w, h)
	if math.Abs(A[0][0]-2) > 0.05 || math.Abs(A[1][0]+1) > 0.05 {
		t.Errorf("global motion %v, want translation (2, -1)", A)
	}
	if res[0] > 0.05 || res[40*w+48] < 5 {
		t.Errorf("residual %.3f outside, %.3f inside the square", res[0], res[40*w+48])
	}
	m := motionCue(key, [][]float32{oth}, [][]float32{flow}, lum, w, h)
	if m == nil {
		t.Fatal("motion cue: none")
	}
	lab := segmentCentre(key, make([]float32, n), m, w, h, DefaultCentreOptions())
	wrong := 0
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if lab[y*w+x] != in(x, y) {
				wrong++
			}
		}
	}
	if wrong > 24*4 {
		t.Errorf("%d pixels mislabelled, want <= %d", wrong, 24*4)
	}
}
