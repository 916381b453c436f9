package matte

// graph is an s-t flow network solved by the Boykov–Kolmogorov max-flow
// algorithm ("An experimental comparison of min-cut/max-flow algorithms
// for energy minimization in vision", PAMI 2004): two search trees grown
// from the terminals, augmentation along the path found where they meet,
// and adoption of the orphans the augmentation cut off. It is the
// workhorse of grid graph cuts (a few hundred thousand nodes, 4- or
// 8-connected). Capacities are integers, so every run is exact and
// deterministic.
type graph struct {
	// per node
	first  []int32 // first outgoing arc, -1 none
	parent []int32 // arc to the parent in its tree, or noParent/terminal/orphan
	ts     []int32 // time stamp of dist
	dist   []int32 // distance to the terminal (a heuristic)
	sink   []bool  // in the sink tree (when parent != noParent)
	active []bool  // in the active queue or being processed
	trCap  []int64 // residual terminal capacity: > 0 from the source, < 0 to the sink
	// per arc; arcs come in pairs, the sister of a is a^1
	head    []int32
	nextArc []int32
	rCap    []int32

	flow    int64
	queue   []int32 // active nodes, FIFO from qh
	qh      int
	orphans []int32 // FIFO from oh
	oh      int
	time    int32
}

const (
	noParent = -1
	terminal = -2
	orphan   = -3
	infDist  = int32(1 << 30)
)

func newGraph(nodes, edgeHint int) *graph {
	g := &graph{
		first:   make([]int32, nodes),
		parent:  make([]int32, nodes),
		ts:      make([]int32, nodes),
		dist:    make([]int32, nodes),
		sink:    make([]bool, nodes),
		active:  make([]bool, nodes),
		trCap:   make([]int64, nodes),
		head:    make([]int32, 0, 2*edgeHint),
		nextArc: make([]int32, 0, 2*edgeHint),
		rCap:    make([]int32, 0, 2*edgeHint),
	}
	for i := range g.first {
		g.first[i] = -1
	}
	return g
}

// addEdge adds i->j with capacity c and j->i with capacity rc (both >= 0).
func (g *graph) addEdge(i, j int, c, rc int32) {
	a := int32(len(g.head))
	g.head = append(g.head, int32(j), int32(i))
	g.nextArc = append(g.nextArc, g.first[i], g.first[j])
	g.rCap = append(g.rCap, c, rc)
	g.first[i], g.first[j] = a, a+1
}

// addTerminal adds capacities source->i (cs) and i->sink (ct), both >= 0.
func (g *graph) addTerminal(i int, cs, ct int64) {
	d := g.trCap[i]
	if d > 0 {
		cs += d
	} else {
		ct -= d
	}
	g.flow += min(cs, ct)
	g.trCap[i] = cs - ct
}

func (g *graph) setActive(i int32) {
	if !g.active[i] {
		g.active[i] = true
		g.queue = append(g.queue, i)
	}
}

func (g *graph) nextActive() int32 {
	for g.qh < len(g.queue) {
		i := g.queue[g.qh]
		g.qh++
		if g.qh == len(g.queue) {
			g.queue, g.qh = g.queue[:0], 0
		} else if g.qh > 4096 && g.qh > len(g.queue)/2 {
			n := copy(g.queue, g.queue[g.qh:])
			g.queue, g.qh = g.queue[:n], 0
		}
		g.active[i] = false
		if g.parent[i] != noParent {
			return i
		}
	}
	return -1
}

func (g *graph) setOrphan(i int32) {
	g.parent[i] = orphan
	g.orphans = append(g.orphans, i)
}

// maxflow computes the maximum flow (returned) and leaves the trees that
// give the minimum cut: see inSource.
func (g *graph) maxflow() int64 {
	for i := range g.first {
		switch {
		case g.trCap[i] > 0:
			g.sink[i], g.parent[i], g.dist[i] = false, terminal, 1
			g.setActive(int32(i))
		case g.trCap[i] < 0:
			g.sink[i], g.parent[i], g.dist[i] = true, terminal, 1
			g.setActive(int32(i))
		default:
			g.parent[i] = noParent
		}
	}
	cur := int32(-1)
	for {
		i := cur
		if i >= 0 {
			g.active[i] = false
			if g.parent[i] == noParent {
				i = -1
			}
		}
		if i < 0 {
			if i = g.nextActive(); i < 0 {
				break
			}
		}
		// Growth: look for an arc from the source tree to the sink tree.
		mid := int32(-1)
		if !g.sink[i] {
			for a := g.first[i]; a >= 0; a = g.nextArc[a] {
				if g.rCap[a] == 0 {
					continue
				}
				j := g.head[a]
				switch {
				case g.parent[j] == noParent:
					g.sink[j], g.parent[j], g.ts[j], g.dist[j] = false, a^1, g.ts[i], g.dist[i]+1
					g.setActive(j)
				case g.sink[j]:
					mid = a
				case g.ts[j] <= g.ts[i] && g.dist[j] > g.dist[i]:
					g.parent[j], g.ts[j], g.dist[j] = a^1, g.ts[i], g.dist[i]+1
				}
				if mid >= 0 {
					break
				}
			}
		} else {
			for a := g.first[i]; a >= 0; a = g.nextArc[a] {
				if g.rCap[a^1] == 0 {
					continue
				}
				j := g.head[a]
				switch {
				case g.parent[j] == noParent:
					g.sink[j], g.parent[j], g.ts[j], g.dist[j] = true, a^1, g.ts[i], g.dist[i]+1
					g.setActive(j)
				case !g.sink[j]:
					mid = a ^ 1
				case g.ts[j] <= g.ts[i] && g.dist[j] > g.dist[i]:
					g.parent[j], g.ts[j], g.dist[j] = a^1, g.ts[i], g.dist[i]+1
				}
				if mid >= 0 {
					break
				}
			}
		}
		g.time++
		if mid < 0 {
			cur = -1
			continue
		}
		// i stays current (marked active so adoption does not queue it).
		g.active[i] = true
		cur = i
		g.augment(mid)
		for g.oh < len(g.orphans) {
			o := g.orphans[g.oh]
			g.oh++
			if g.sink[o] {
				g.adoptSink(o)
			} else {
				g.adoptSource(o)
			}
		}
		g.orphans, g.oh = g.orphans[:0], 0
	}
	return g.flow
}

// augment pushes the bottleneck along source -> ... -> mid -> ... -> sink.
func (g *graph) augment(mid int32) {
	b := int64(g.rCap[mid])
	i := g.head[mid^1]
	for {
		a := g.parent[i]
		if a == terminal {
			break
		}
		b = min(b, int64(g.rCap[a^1]))
		i = g.head[a]
	}
	b = min(b, g.trCap[i])
	i = g.head[mid]
	for {
		a := g.parent[i]
		if a == terminal {
			break
		}
		b = min(b, int64(g.rCap[a]))
		i = g.head[a]
	}
	b = min(b, -g.trCap[i])

	bb := int32(b)
	g.rCap[mid^1] += bb
	g.rCap[mid] -= bb
	i = g.head[mid^1]
	for {
		a := g.parent[i]
		if a == terminal {
			break
		}
		g.rCap[a] += bb
		g.rCap[a^1] -= bb
		if g.rCap[a^1] == 0 {
			g.setOrphan(i)
		}
		i = g.head[a]
	}
	g.trCap[i] -= b
	if g.trCap[i] == 0 {
		g.setOrphan(i)
	}
	i = g.head[mid]
	for {
		a := g.parent[i]
		if a == terminal {
			break
		}
		g.rCap[a^1] += bb
		g.rCap[a] -= bb
		if g.rCap[a] == 0 {
			g.setOrphan(i)
		}
		i = g.head[a]
	}
	g.trCap[i] += b
	if g.trCap[i] == 0 {
		g.setOrphan(i)
	}
	g.flow += b
}

// origin returns the distance from j to its terminal through valid
// parents (infDist when the path meets an orphan), and marks the path.
func (g *graph) origin(j int32) int32 {
	d := int32(0)
	k := j
	for {
		if g.ts[k] == g.time {
			d += g.dist[k]
			break
		}
		a := g.parent[k]
		d++
		if a == terminal {
			g.ts[k], g.dist[k] = g.time, 1
			break
		}
		if a == orphan {
			return infDist
		}
		k = g.head[a]
	}
	dd := d
	for k = j; g.ts[k] != g.time; k = g.head[g.parent[k]] {
		g.ts[k], g.dist[k] = g.time, dd
		dd--
	}
	return d
}

func (g *graph) adoptSource(i int32) {
	best, dmin := int32(noParent), infDist
	for a := g.first[i]; a >= 0; a = g.nextArc[a] {
		if g.rCap[a^1] == 0 {
			continue
		}
		j := g.head[a]
		if g.sink[j] || g.parent[j] == noParent {
			continue
		}
		if d := g.origin(j); d < dmin {
			best, dmin = a, d
		}
	}
	g.parent[i] = best
	if best != noParent {
		g.ts[i], g.dist[i] = g.time, dmin+1
		return
	}
	for a := g.first[i]; a >= 0; a = g.nextArc[a] {
		j := g.head[a]
		pa := g.parent[j]
		if g.sink[j] || pa == noParent {
			continue
		}
		if g.rCap[a^1] != 0 {
			g.setActive(j)
		}
		if pa != terminal && pa != orphan && g.head[pa] == i {
			g.setOrphan(j)
		}
	}
}

func (g *graph) adoptSink(i int32) {
	best, dmin := int32(noParent), infDist
	for a := g.first[i]; a >= 0; a = g.nextArc[a] {
		if g.rCap[a] == 0 {
			continue
		}
		j := g.head[a]
		if !g.sink[j] || g.parent[j] == noParent {
			continue
		}
		if d := g.origin(j); d < dmin {
			best, dmin = a, d
		}
	}
	g.parent[i] = best
	if best != noParent {
		g.ts[i], g.dist[i] = g.time, dmin+1
		return
	}
	for a := g.first[i]; a >= 0; a = g.nextArc[a] {
		j := g.head[a]
		pa := g.parent[j]
		if !g.sink[j] || pa == noParent {
			continue
		}
		if g.rCap[a] != 0 {
			g.setActive(j)
		}
		if pa != terminal && pa != orphan && g.head[pa] == i {
			g.setOrphan(j)
		}
	}
}

// inSource reports whether node i is on the source side of the minimum
// cut found by maxflow (the nodes still reachable from the source).
func (g *graph) inSource(i int) bool {
	return g.parent[i] != noParent && !g.sink[i]
}
