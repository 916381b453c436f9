package cpuref

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/vfxrender/vfx/internal/hugepage"
	"github.com/vfxrender/vfx/kernels/rows"
)

// DefaultPoolBytes caps the memory a CPU device keeps in its free lists.
const DefaultPoolBytes = 1 << 30

// MaxPixels bounds w*h*channels of one image (guards int overflow and
// absurd allocations; 16384x16384x4 fits).
const MaxPixels = 1 << 30

// CPU is the pure-Go reference backend. Every op is parallel over fixed
// row bands (band boundaries depend only on the image size, never on the
// worker count), so results are bit-identical for any worker count.
// A CPU is safe for concurrent use on distinct images. Scratch buffers
// and freed images go to a size-keyed pool (capped at 1 GiB).
type CPU struct {
	workers int
	closed  atomic.Bool
	pool    bufPool
	lut     *rows.LUTs
	// tabs caches resampling tables (immutable once made) by kind and
	// sizes; strips the per-worker scratch of the frame ops, so that a
	// job's frames allocate nothing at full resolution.
	tabs   sync.Map
	strips sync.Pool
	// shift is the last plate move's plan (shiftFor), read-only once made.
	shiftMu sync.Mutex
	shift   *rows.Shift
	shiftK  shiftKey
}

// NewCPU returns a CPU device that uses up to workers goroutines per op
// (workers <= 0 means runtime.GOMAXPROCS(0)). It builds its conversion
// tables once here; it never fails.
func NewCPU(workers int) *CPU {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	d := &CPU{workers: workers, lut: rows.NewLUTs()}
	d.pool.max = DefaultPoolBytes
	return d
}

// Workers is the number of goroutines the device uses per op.
func (d *CPU) Workers() int { return d.workers }

// Close drops the device's pooled buffers; afterwards NewImage fails.
// Images already allocated stay usable. Close is idempotent and always
// returns nil.
func (d *CPU) Close() error {
	if d.closed.Swap(true) {
		return nil
	}
	d.pool.drain()
	return nil
}

// NewImage allocates a zeroed w x h image with 1 to 4 channels. It fails
// with an error wrapping ErrShape for a non-positive or oversized shape,
// and fails after Close.
func (d *CPU) NewImage(w, h, channels int) (Image, error) {
	if d.closed.Load() {
		return nil, errors.New("kernels: cpu: NewImage on a closed device")
	}
	if w <= 0 || h <= 0 || channels < 1 || channels > 4 || w > MaxPixels/h || w*h > MaxPixels/channels {
		return nil, fmt.Errorf("kernels: cpu: NewImage %dx%dx%d: %w", w, h, channels, ErrShape)
	}
	n := w * h * channels
	pix, reused := d.pool.get(n)
	if reused {
		d.clear(pix)
	}
	return &cpuImage{w: w, h: h, c: channels, pix: pix}, nil
}

// Free returns img's buffer to the device's pool. Free(nil), a second
// Free and an image of another device are no-ops.
func (d *CPU) Free(img Image) {
	m, ok := img.(*cpuImage)
	if !ok || m == nil || m.pix == nil {
		return
	}
	pix := m.pix
	m.pix = nil
	m.freed = true
	if !d.closed.Load() {
		d.pool.put(pix)
	}
}

// TrimPool drops the freed buffers the device keeps for reuse, so that
// the Go heap can reclaim them (see PoolTrimmer). Images in use are not
// touched; later allocations fill the pool again.
func (d *CPU) TrimPool() { d.pool.drain() }

// ReadPixels returns a copy of src, planar, channel-major.
func (d *CPU) ReadPixels(src Image) ([]float32, error) { return d.readPixels("ReadPixels", nil, src) }

// ReadPixelsTo is ReadPixels into dst's memory when its capacity holds
// src (else a new slice): it returns dst[:n] holding src's n values.
func (d *CPU) ReadPixelsTo(dst []float32, src Image) ([]float32, error) {
	return d.readPixels("ReadPixelsTo", dst, src)
}

func (d *CPU) readPixels(op string, dst []float32, src Image) ([]float32, error) {
	s, err := cpuImg(op, "src", src)
	if err != nil {
		return nil, err
	}
	if cap(dst) < len(s.pix) {
		dst = make([]float32, len(s.pix))
		hugepage.Advise(dst)
	}
	dst = dst[:len(s.pix)]
	copy(dst, s.pix)
	return dst, nil
}

// WritePixels copies planar, channel-major data into dst; len(data) must
// be exactly width*height*channels (else an error wrapping ErrShape).
func (d *CPU) WritePixels(dst Image, data []float32) error {
	m, err := cpuImg("WritePixels", "dst", dst)
	if err != nil {
		return err
	}
	if len(data) != len(m.pix) {
		return fmt.Errorf("kernels: cpu: WritePixels: %d values for a %dx%dx%d image: %w", len(data), m.w, m.h, m.c, ErrShape)
	}
	copy(m.pix, data)
	return nil
}

// cpuImage is a planar, channel-major float32 image in host memory.
type cpuImage struct {
	w, h, c int
	pix     []float32
	freed   bool
}

func (m *cpuImage) Width() int    { return m.w }
func (m *cpuImage) Height() int   { return m.h }
func (m *cpuImage) Channels() int { return m.c }

// plane returns channel c as a slice of exactly w*h values.
func (m *cpuImage) plane(c int) []float32 {
	n := m.w * m.h
	return m.pix[c*n : (c+1)*n : (c+1)*n]
}

// cpuImg converts an Image handed to op (as argument name) into the CPU
// type, rejecting nil, foreign and freed images.
func cpuImg(op, name string, img Image) (*cpuImage, error) {
	if img == nil {
		return nil, fmt.Errorf("kernels: cpu: %s: nil %s image: %w", op, name, ErrShape)
	}
	m, ok := img.(*cpuImage)
	if !ok || m == nil {
		return nil, fmt.Errorf("kernels: cpu: %s: %s is a %T: %w", op, name, img, ErrForeignImage)
	}
	if m.freed || m.pix == nil {
		return nil, fmt.Errorf("kernels: cpu: %s: %s used after Free: %w", op, name, ErrForeignImage)
	}
	return m, nil
}

// optImg is cpuImg for an optional argument: nil gives (nil, nil).
func optImg(op, name string, img Image) (*cpuImage, error) {
	if img == nil {
		return nil, nil
	}
	if m, ok := img.(*cpuImage); ok && m == nil {
		return nil, nil
	}
	return cpuImg(op, name, img)
}

// shapeErr formats an error wrapping ErrShape.
func shapeErr(op, format string, args ...any) error {
	return fmt.Errorf("kernels: cpu: %s: %s: %w", op, fmt.Sprintf(format, args...), ErrShape)
}

func dims(m *cpuImage) string { return fmt.Sprintf("%dx%dx%d", m.w, m.h, m.c) }

// sameSize checks that every non-nil image has dst's width and height.
func sameSize(op string, ref *cpuImage, names []string, imgs ...*cpuImage) error {
	for i, m := range imgs {
		if m == nil {
			continue
		}
		if m.w != ref.w || m.h != ref.h {
			return shapeErr(op, "%s is %s, want %dx%d", names[i], dims(m), ref.w, ref.h)
		}
	}
	return nil
}

// wantChannels checks m's channel count.
func wantChannels(op, name string, m *cpuImage, c int) error {
	if m != nil && m.c != c {
		return shapeErr(op, "%s has %d channels, want %d", name, m.c, c)
	}
	return nil
}

// BandRows is the fixed band height for an image of width w: about 32K
// pixels per band. It depends only on the width, so reductions that
// combine per-band partials are independent of the worker count.
func BandRows(w int) int {
	r := (32768 + w - 1) / w
	return max(4, min(r, 256))
}

// parallel calls fn for consecutive bands [lo, hi) of n rows of height
// band (the last may be shorter), on up to d.workers goroutines. wk is the
// index (< d.workers) of the goroutine running the call, for per-worker
// scratch; two calls with the same wk never run concurrently.
func (d *CPU) parallel(n, band int, fn func(wk, lo, hi int)) {
	if n <= 0 {
		return
	}
	band = max(band, 1)
	nb := (n + band - 1) / band
	nw := min(d.workers, nb)
	if nw <= 1 {
		for lo := 0; lo < n; lo += band {
			fn(0, lo, min(lo+band, n))
		}
		return
	}
	var next atomic.Int64
	work := func(wk int) {
		for {
			b := int(next.Add(1) - 1)
			if b >= nb {
				return
			}
			lo := b * band
			fn(wk, lo, min(lo+band, n))
		}
	}
	var wg sync.WaitGroup
	wg.Add(nw - 1)
	for wk := 1; wk < nw; wk++ {
		go func() {
			defer wg.Done()
			work(wk)
		}()
	}
	work(0)
	wg.Wait()
}

// clear zeroes s in parallel.
func (d *CPU) clear(s []float32) {
	const chunk = 1 << 18
	if len(s) <= chunk {
		clear(s)
		return
	}
	d.parallel(len(s), chunk, func(_, lo, hi int) { clear(s[lo:hi]) })
}

// scratch returns a pooled buffer of n values with undefined contents.
func (d *CPU) scratch(n int) []float32 {
	b, _ := d.pool.get(n)
	return b
}

// release returns a scratch buffer to the pool.
func (d *CPU) release(b []float32) {
	if b != nil && !d.closed.Load() {
		d.pool.put(b)
	}
}

// bufPool is a size-keyed free list of float32 buffers with a byte cap.
type bufPool struct {
	mu    sync.Mutex
	free  map[int][][]float32
	bytes int64
	max   int64
}

// get returns a buffer of length n and whether it was reused (and so may
// hold old data).
func (p *bufPool) get(n int) ([]float32, bool) {
	p.mu.Lock()
	if l := p.free[n]; len(l) > 0 {
		b := l[len(l)-1]
		l[len(l)-1] = nil
		p.free[n] = l[:len(l)-1]
		p.bytes -= int64(n) * 4
		p.mu.Unlock()
		return b, true
	}
	p.mu.Unlock()
	b := make([]float32, n)
	hugepage.Advise(b)
	return b, false
}

func (p *bufPool) put(b []float32) {
	n := cap(b)
	b = b[:n]
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bytes+int64(n)*4 > p.max {
		return
	}
	if p.free == nil {
		p.free = make(map[int][][]float32)
	}
	p.free[n] = append(p.free[n], b)
	p.bytes += int64(n) * 4
}

func (p *bufPool) drain() {
	p.mu.Lock()
	p.free = nil
	p.bytes = 0
	p.mu.Unlock()
}
