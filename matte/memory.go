package matte

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/vfxrender/vfx/internal/resample"
	"github.com/vfxrender/vfx/kernels/rows"
)

// FeatureMap is a network's feature map of one frame: C planes of W x H
// values (channel-major), each place describing a cell of the frame (the
// network's input covers the whole frame, so cell (x, y) is the part
// [x·w/W, (x+1)·w/W) x [y·h/H, (y+1)·h/H) of a w x h frame).
type FeatureMap struct {
	W, H, C int
	Data    []float32
}

// ErrNoFeatures is a network that gives no feature maps: select runs
// without its memory.
var ErrNoFeatures = errors.New("matte: the network gives no feature maps")

// FeatureObjectness is an Objectness whose network also gives its
// feature map of the frames it ran on (infer.Card.Features): what the
// memory (below) compares frames by.
type FeatureObjectness interface {
	// Features is frame i's feature map (frame i must be one the network
	// ran on); ErrNoFeatures when the network gives none.
	Features(ctx context.Context, i int) (FeatureMap, error)
}

// MemoryShipped reports whether the embedded fusion model has memory
// weights, i.e. whether select jobs read the network's features (the
// worker then loads the model with its feature output).
func MemoryShipped() bool { return DefaultNetOptions().memModel() }

// MemTaus are the softmax temperatures of the memory's readouts (one
// readout each, all fed to the fitted model, which weighs them): sharp,
// middle and broad over cosine similarities in [-1, 1].
var MemTaus = [...]float32{0.02, 0.05, 0.1}

// memCut is where the readouts' softmax stops: a remembered cell whose
// weight is under e^-memCut (3e-7) of the best cell's is left out, below
// what a float32 share can show beside the best cell's.
const memCut = 15

// The memory model's features, per pixel of a frame the network ran on:
// the network's log-odds and each readout's (clamped to ±6); then how far
// the frame is from the remembered keyframe (far, below) and its products
// with the middle readout and the network, so that the fitted model can
// trust the memory less, and the network more, the longer the subject has
// had to change its look since the keyframe.
const (
	mBias = iota
	mNet
	mRead0
	mFar           = mRead0 + len(MemTaus)
	mReadFar       = mFar + 1
	mNetFar        = mFar + 2
	NumMemFeatures = mFar + 3
)

// MemFeatureNames name the memory model's features in order.
var MemFeatureNames = [NumMemFeatures]string{"bias", "net", "read_sharp", "read_mid", "read_broad",
	"far", "read_mid_x_far", "net_x_far"}

// memFarFrames is where the distance feature stops growing: a frame this
// many frames or more from the keyframe has far = 1. It is the length of
// the longest development clip (91 frames, less the keyframe), the range
// the model's weights were fitted over: beyond it the model keeps its
// last fitted trust instead of extrapolating.
const memFarFrames = 90

// memFar is the distance feature of frame i for the keyframe key: |i -
// key| / memFarFrames, at most 1.
func memFar(i, key int) float32 {
	d := i - key
	if d < 0 {
		d = -d
	}
	return float32(min(d, memFarFrames)) / memFarFrames
}

// memory holds what select's object looked like: the feature vectors of
// the keyframe's cells (and, with NetOptions.MemRecent, of the last frame
// the network ran on in this direction), each with the share of its cell
// that the matte covered. A frame's cell reads the memory as space-time
// memory readers do (STM, XMem), with a frozen encoder: a softmax over its
// similarity to every remembered cell, averaging their shares.
type memory struct {
	c    int
	key0 int       // the keyframe's index (set by its user)
	mean []float32 // the keyframe's mean feature, removed before comparing
	key  memFrame
	last memFrame
	// read's scratch, kept between reads: the frame's cells as rows, the
	// readouts at the feature map's size, the remembered shares in a row,
	// and the similarities and weights of a block of cells.
	q    []float32
	grid [len(MemTaus)][]float32
	vals []float32
	sc   []memScratch // one per reader
	// The read under way: the frames read, the frame's cells and their
	// blocks, the next block a reader takes, and the readers.
	mem           []memFrame
	cells, blocks int
	next          atomic.Int64
	wg            sync.WaitGroup
}

// memBlock is how many of a frame's cells read the memory together: the
// similarities of a block (memBlock x the remembered cells: 384 KB with
// two frames of 1024 cells) are still in the L2 cache when the softmax
// reads them. A multiple of 3, rows.DotsBlock's queries at a time.
const memBlock = 48

// memScratch is one reader's similarities (memBlock rows of the
// remembered cells) and one row's weights at one temperature.
type memScratch struct {
	sim []float32
	wts []float64
}

type memFrame struct {
	n    int
	keys []float32 // n x c, centred and unit length
	vals []float32 // n shares in [0,1]
}

// newMemory remembers the keyframe f with its matte (w x h, flow size).
func newMemory(f FeatureMap, matte []float32, w, h int) (*memory, error) {
	if f.W <= 0 || f.H <= 0 || f.C <= 0 || len(f.Data) != f.W*f.H*f.C {
		return nil, fmt.Errorf("matte: memory: a %dx%dx%d feature map with %d values", f.W, f.H, f.C, len(f.Data))
	}
	m := &memory{c: f.C, mean: make([]float32, f.C)}
	n := f.W * f.H
	for ch := 0; ch < f.C; ch++ {
		var s float64
		for _, v := range f.Data[ch*n : (ch+1)*n] {
			s += float64(v)
		}
		m.mean[ch] = float32(s / float64(n))
	}
	m.key = m.frame(f, matte, w, h)
	return m, nil
}

// frame makes f's cells into memory entries with their share of matte.
func (m *memory) frame(f FeatureMap, matte []float32, w, h int) memFrame {
	n := f.W * f.H
	fr := memFrame{n: n, keys: m.normalised(f), vals: make([]float32, n)}
	resample.Bilinear(fr.vals, f.W, f.H, matte, w, h)
	return fr
}

// normalised is f's cells as rows, the keyframe's mean removed and scaled
// to unit length (a cell equal to the mean stays 0: similar to nothing).
func (m *memory) normalised(f FeatureMap) []float32 {
	return m.normalisedInto(nil, f)
}

// normalisedInto is normalised into buf when it holds enough.
func (m *memory) normalisedInto(buf []float32, f FeatureMap) []float32 {
	n := f.W * f.H
	out := buf[:0]
	if cap(out) < n*f.C {
		out = make([]float32, n*f.C)
	}
	out = out[:n*f.C]
	for ch := 0; ch < f.C; ch++ {
		mu := m.mean[ch]
		for i, v := range f.Data[ch*n : (ch+1)*n] {
			out[i*f.C+ch] = v - mu
		}
	}
	for i := 0; i < n; i++ {
		row := out[i*f.C : (i+1)*f.C]
		var s float64
		for _, v := range row {
			s += float64(v) * float64(v)
		}
		if s > 0 {
			k := float32(1 / math.Sqrt(s))
			for j := range row {
				row[j] *= k
			}
		}
	}
	return out
}

// remember makes frame f (with its fused matte) the memory's recent frame.
func (m *memory) remember(f FeatureMap, matte []float32, w, h int) {
	if f.C != m.c || len(f.Data) != f.W*f.H*f.C {
		return
	}
	m.last = m.frame(f, matte, w, h)
}

// forget drops the recent frame (a new direction starts at the keyframe).
func (m *memory) forget() { m.last = memFrame{} }

// read writes each readout of frame f at the flow size: dst[k] (w*h
// values in [0,1]) for MemTaus[k]. Each cell of f is a query: its
// similarity to every remembered cell (rows.DotsBlock, a block of cells at
// a time), then for each temperature a softmax over them (rows.ExpScaled)
// that averages the remembered shares. The values are those of the plain
// loop (rows.Dots per cell, math.Exp per remembered cell) bit for bit
// (TestMemoryReadSameBits).
//
// The blocks are shared out to GOMAXPROCS readers: select calls read
// between the device's ops, with the cores otherwise idle. A cancelled
// ctx stops the readers at their next block and is read's error.
func (m *memory) read(ctx context.Context, f FeatureMap, w, h int, dst [][]float32) error {
	if f.C != m.c || len(f.Data) != f.W*f.H*f.C {
		return fmt.Errorf("matte: memory of %d planes read with a %dx%dx%d feature map", m.c, f.W, f.H, f.C)
	}
	m.q = m.normalisedInto(m.q, f)
	n := f.W * f.H
	for k := range m.grid {
		if cap(m.grid[k]) < n {
			m.grid[k] = make([]float32, n)
		}
		m.grid[k] = m.grid[k][:n]
	}
	m.mem = append(m.mem[:0], m.key)
	if m.last.n > 0 {
		m.mem = append(m.mem, m.last)
	}
	m.vals = m.vals[:0]
	for _, fr := range m.mem {
		m.vals = append(m.vals, fr.vals...)
	}
	m.cells, m.blocks = n, (n+memBlock-1)/memBlock
	readers := max(1, min(runtime.GOMAXPROCS(0), m.blocks))
	for len(m.sc) < readers {
		m.sc = append(m.sc, memScratch{})
	}
	m.next.Store(0)
	for r := 1; r < readers; r++ {
		m.wg.Go(func() { m.reader(ctx, &m.sc[r]) })
	}
	m.reader(ctx, &m.sc[0])
	m.wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	for k := range MemTaus {
		resample.Bilinear(dst[k], w, h, m.grid[k], f.W, f.H)
	}
	return nil
}

// reader reads blocks of cells (m.next) until none is left or ctx is
// cancelled.
func (m *memory) reader(ctx context.Context, sc *memScratch) {
	for ctx.Err() == nil {
		b := int(m.next.Add(1)) - 1
		if b >= m.blocks {
			return
		}
		m.readBlock(sc, b*memBlock, min(m.cells, (b+1)*memBlock))
	}
}

// readBlock reads the memory frames m.mem for the query cells [i0, i1) of
// m.q into m.grid, with the scratch sc.
func (m *memory) readBlock(sc *memScratch, i0, i1 int) {
	c, total := m.c, len(m.vals)
	if cap(sc.sim) < memBlock*total {
		sc.sim = make([]float32, memBlock*total)
	}
	if cap(sc.wts) < total {
		sc.wts = make([]float64, total)
	}
	sims, wts, vals := sc.sim[:(i1-i0)*total], sc.wts[:total], m.vals
	j := 0
	for _, fr := range m.mem {
		rows.DotsBlock(sims[j:], total, m.q[i0*c:i1*c], fr.keys, c)
		j += fr.n
	}
	for i := i0; i < i1; i++ {
		sim := sims[(i-i0)*total:][:total]
		best := slices.Max(sim)
		for k, tau := range MemTaus {
			// Cells more than memCut temperatures below the best weigh
			// under e^-memCut of it: left out.
			var num, den float64
			cut := best - memCut*tau
			rows.ExpScaled(wts, sim, best, tau, cut)
			for e, s := range sim {
				if s < cut {
					continue
				}
				wt := wts[e]
				num += wt * float64(vals[e])
				den += wt
			}
			m.grid[k][i] = float32(num / den)
		}
	}
}

// MemTrace is what the memory saw on one frame the network ran on
// (NetOptions.MemTrace): the network's map before the memory model and
// each readout, at the flow size; Key is the remembered keyframe.
type MemTrace struct {
	Frame, Key int
	W, H       int
	Net        []float32
	Reads      [][]float32
}

// Features writes pixel i's memory-model features into phi
// (NumMemFeatures values).
func (t MemTrace) Features(phi []float32, i int) {
	memFeatures(phi, t.Net[i], t.Reads, memFar(t.Frame, t.Key), i)
}

// memFeatures writes pixel i's memory-model features into phi: net is the
// network's value there, far the frame's distance feature (memFar).
func memFeatures(phi []float32, net float32, reads [][]float32, far float32, i int) {
	phi[mBias] = 1
	phi[mNet] = min(max(logit(net), -6), 6)
	for k := range MemTaus {
		phi[mRead0+k] = min(max(logit(reads[k][i]), -6), 6)
	}
	phi[mFar] = far
	phi[mReadFar] = phi[mRead0+1] * far
	phi[mNetFar] = phi[mNet] * far
}
