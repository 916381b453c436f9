//go:build cuda

package kernels

import (
	_ "embed"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"unsafe"

	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/kernels/cpuref"
	"github.com/vfxrender/vfx/kernels/rows"
	"gorgonia.org/cu"
)

//go:embed cuda/vfx.fatbin
var cudaFatbin string

// CUDABuilt reports whether this binary has the CUDA backend.
const CUDABuilt = true

var (
	_ Device = (*CUDA)(nil)
	_ Ops    = (*CUDA)(nil)
)

// CUDADeviceCount returns the number of CUDA devices the driver sees
// (after CUDA_VISIBLE_DEVICES).
func CUDADeviceCount() (int, error) {
	n, err := cu.NumDevices()
	if err != nil {
		return 0, fmt.Errorf("kernels: cuda: %w", err)
	}
	return n, nil
}

// CUDA is the GPU backend. Every CUDA call runs on one goroutine locked
// to an OS thread that holds the device's primary context; all work goes
// to one non-blocking stream in submission order, so ops never
// synchronise: only ReadPixels, Download, GainCompositeDownload and the
// reductions wait, for the data they return. Images and scratch buffers
// come from a size-keyed pool of device allocations (reused in stream
// order, which makes reuse safe without waiting). Uploads go through two
// pinned staging buffers (each reused once its copy has completed);
// downloads through one. Sampling tables are built on the host with the
// CPU backend's code (so both backends sample identically) and cached on
// the device per size.
//
// A CUDA device is safe for concurrent use; calls are serialised on its
// thread. One device per job (or per worker) gives one stream per job.
type CUDA struct {
	name  string
	calls chan func()
	mu    sync.RWMutex // Close takes it exclusively
	dead  bool

	// Owned by the device thread.
	ctx       cu.CUContext
	dev       cu.Device
	mod       cu.Module
	stream    cu.Stream
	fns       map[string]cu.Function
	lut       cu.DevicePtr
	host      *rows.LUTs
	pool      map[int64][]cu.DevicePtr
	poolBytes int64
	poolMax   int64
	live      int64 // bytes allocated and not in the pool
	tables    map[string]cu.DevicePtr
	up        [2]pinned
	upEv      [2]cu.Event
	upUsed    [2]bool
	upNext    int
	down      pinned
}

// errClosed is returned by every method after Close.
var errClosed = errors.New("kernels: cuda: device is closed")

// NewCUDA opens CUDA device ordinal (counted among the devices that
// CUDA_VISIBLE_DEVICES leaves visible), loads the embedded fatbin and
// uploads the conversion tables.
func NewCUDA(ordinal int) (Device, error) {
	d := &CUDA{calls: make(chan func()), poolMax: cpuref.DefaultPoolBytes, host: rows.NewLUTs()}
	started := make(chan error, 1)
	go d.loop(ordinal, started)
	if err := <-started; err != nil {
		return nil, err
	}
	return d, nil
}

// loop is the device thread.
func (d *CUDA) loop(ordinal int, started chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := d.open(ordinal); err != nil {
		d.release()
		started <- fmt.Errorf("kernels: cuda:%d: %w", ordinal, err)
		return
	}
	started <- nil
	for fn := range d.calls {
		fn()
	}
}

func (d *CUDA) open(ordinal int) error {
	n, err := cu.NumDevices()
	if err != nil {
		return err
	}
	if ordinal < 0 || ordinal >= n {
		return fmt.Errorf("no CUDA device %d (%d visible)", ordinal, n)
	}
	d.dev, err = cu.GetDevice(ordinal)
	if err != nil {
		return err
	}
	if d.ctx, err = d.dev.RetainPrimaryCtx(); err != nil {
		return fmt.Errorf("retain primary context: %w", err)
	}
	if err = cu.SetCurrentContext(d.ctx); err != nil {
		return err
	}
	d.name = fmt.Sprintf("cuda:%d", ordinal)
	if d.mod, err = cu.LoadData(cudaFatbin); err != nil {
		return fmt.Errorf("load fatbin (sm_80/86/89/90 SASS + compute_90 PTX): %w", err)
	}
	if d.stream, err = cu.MakeStream(cu.NonBlocking); err != nil {
		return err
	}
	for i := range d.upEv {
		if d.upEv[i], err = cu.MakeEvent(cu.DisableTiming); err != nil {
			return err
		}
	}
	d.fns = make(map[string]cu.Function)
	d.pool = make(map[int64][]cu.DevicePtr)
	d.tables = make(map[string]cu.DevicePtr)
	return d.uploadLUTs()
}

// uploadLUTs copies the CPU backend's conversion tables into one device
// buffer with the layout of kernels/cuda/common.cuh.
func (d *CUDA) uploadLUTs() error {
	const (
		eotfExt = 0
		yuvIn   = eotfExt + 65536
		eotf8   = yuvIn + 2*2*5*256
		gray8   = eotf8 + 256
		oetfB   = gray8 + 256
		codeThr = oetfB + 131072
		codeB   = codeThr + 256
		words   = codeB + 32768
	)
	t := d.host
	w := make([]uint32, words)
	for i, v := range t.EOTFExt {
		w[eotfExt+i] = math.Float32bits(v)
	}
	for cs := range 2 {
		for fr := range 2 {
			y := &t.YUVIn[cs][fr]
			base := yuvIn + (cs*2+fr)*5*256
			for k, tab := range [][256]int32{y.Y, y.RV, y.GU, y.GV, y.BU} {
				for i, v := range tab {
					w[base+k*256+i] = uint32(v)
				}
			}
		}
	}
	for i := range 256 {
		w[eotf8+i] = math.Float32bits(t.EOTF8[i])
		w[gray8+i] = math.Float32bits(t.Gray8[i])
		w[codeThr+i] = math.Float32bits(t.CodeThr[i])
	}
	for i, v := range t.OETFB {
		w[oetfB+i] = math.Float32bits(v)
	}
	cb := unsafe.Slice((*byte)(unsafe.Pointer(&w[codeB])), 4*32768)
	copy(cb, t.CodeB[:])
	var err error
	if d.lut, err = cu.MemAlloc(int64(4 * words)); err != nil {
		return err
	}
	return cu.MemcpyHtoD(d.lut, unsafe.Pointer(&w[0]), int64(4*words))
}

// release frees everything the thread owns (after a sync).
func (d *CUDA) release() {
	if d.ctx == (cu.CUContext{}) {
		return
	}
	if d.stream != (cu.Stream{}) {
		_ = d.stream.Synchronize()
	}
	for _, l := range d.pool {
		for _, p := range l {
			_ = cu.MemFree(p)
		}
	}
	d.pool = nil
	for _, p := range d.tables {
		_ = cu.MemFree(p)
	}
	d.tables = nil
	if d.lut != 0 {
		_ = cu.MemFree(d.lut)
	}
	for i := range d.up {
		d.up[i].free()
		if d.upEv[i] != (cu.Event{}) {
			_ = cu.DestroyEvent(&d.upEv[i])
		}
	}
	d.down.free()
	if d.stream != (cu.Stream{}) {
		_ = d.stream.Destroy()
	}
	if d.mod != (cu.Module{}) {
		_ = d.mod.Unload()
	}
	_ = d.dev.ReleasePrimaryCtx()
	d.ctx = cu.CUContext{}
}

// do runs fn on the device thread and returns its error.
func (d *CUDA) do(fn func() error) error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.dead {
		return errClosed
	}
	errc := make(chan error, 1)
	d.calls <- func() { errc <- fn() }
	return <-errc
}

// Name returns "cuda:N".
func (d *CUDA) Name() string { return d.name }

// Ops returns d itself.
func (d *CUDA) Ops() Ops { return d }

// Close waits for queued work, frees every device and pinned buffer and
// stops the device thread. It is idempotent.
func (d *CUDA) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dead {
		return nil
	}
	d.dead = true
	var err error
	done := make(chan struct{})
	d.calls <- func() {
		err = d.stream.Synchronize()
		d.release()
		close(done)
	}
	<-done
	close(d.calls)
	if err != nil {
		return fmt.Errorf("kernels: %s: Close: %w", d.name, err)
	}
	return nil
}

// fn returns the kernel called name.
func (d *CUDA) fn(name string) (cu.Function, error) {
	if f, ok := d.fns[name]; ok {
		return f, nil
	}
	f, err := d.mod.Function(name)
	if err != nil {
		return f, fmt.Errorf("kernel %s: %w", name, err)
	}
	d.fns[name] = f
	return f, nil
}

// launch2 runs a 2D kernel over nx x ny threads (blocks of 32 x 8).
func (d *CUDA) launch2(name string, nx, ny int, k *kargs) error {
	f, err := d.fn(name)
	if err != nil {
		return err
	}
	if nx <= 0 || ny <= 0 {
		return nil
	}
	return launchRaw(f, (nx+31)/32, (ny+7)/8, 32, 8, d.stream, k)
}

// launch1 runs a 1D kernel over n threads (blocks of 256).
func (d *CUDA) launch1(name string, n int, k *kargs) error {
	f, err := d.fn(name)
	if err != nil {
		return err
	}
	if n <= 0 {
		return nil
	}
	return launchRaw(f, (n+255)/256, 1, 256, 1, d.stream, k)
}

// launchGS runs a grid-stride 1D kernel over n items.
func (d *CUDA) launchGS(name string, n int, k *kargs) error {
	f, err := d.fn(name)
	if err != nil {
		return err
	}
	if n <= 0 {
		return nil
	}
	return launchRaw(f, min((n+255)/256, 16384), 1, 256, 1, d.stream, k)
}

// alloc returns a device buffer of n bytes from the pool (contents
// undefined).
func (d *CUDA) alloc(n int64) (cu.DevicePtr, error) {
	n = (n + 255) &^ 255
	if l := d.pool[n]; len(l) > 0 {
		p := l[len(l)-1]
		d.pool[n] = l[:len(l)-1]
		d.poolBytes -= n
		d.live += n
		return p, nil
	}
	p, err := cu.MemAlloc(n)
	if err != nil {
		// Out of memory: drop the pool and retry once.
		if d.poolBytes > 0 {
			_ = d.stream.Synchronize()
			for k, l := range d.pool {
				for _, q := range l {
					_ = cu.MemFree(q)
				}
				delete(d.pool, k)
			}
			d.poolBytes = 0
			p, err = cu.MemAlloc(n)
		}
		if err != nil {
			return 0, fmt.Errorf("cuMemAlloc %d bytes: %w", n, err)
		}
	}
	d.live += n
	return p, nil
}

// put returns a buffer of n bytes (as passed to alloc) to the pool. Work
// already queued that uses it runs before any later user (one stream).
func (d *CUDA) put(p cu.DevicePtr, n int64) {
	if p == 0 {
		return
	}
	n = (n + 255) &^ 255
	d.live -= n
	if d.poolBytes+n > d.poolMax {
		_ = d.stream.Synchronize()
		_ = cu.MemFree(p)
		return
	}
	d.pool[n] = append(d.pool[n], p)
	d.poolBytes += n
}

// table returns the device copy of a host table, cached under key.
func (d *CUDA) table(key string, build func() []byte) (cu.DevicePtr, error) {
	if p, ok := d.tables[key]; ok {
		return p, nil
	}
	if len(d.tables) >= 512 {
		_ = d.stream.Synchronize()
		for k, p := range d.tables {
			_ = cu.MemFree(p)
			delete(d.tables, k)
		}
	}
	b := build()
	p, err := cu.MemAlloc(int64(max(len(b), 4)))
	if err != nil {
		return 0, err
	}
	if len(b) > 0 {
		if err := cu.MemcpyHtoD(p, unsafe.Pointer(&b[0]), int64(len(b))); err != nil {
			_ = cu.MemFree(p)
			return 0, err
		}
	}
	d.tables[key] = p
	return p, nil
}

// cudaImage is a planar float32 image in device memory.
type cudaImage struct {
	w, h, c int
	ptr     cu.DevicePtr
	dev     *CUDA
}

func (m *cudaImage) Width() int    { return m.w }
func (m *cudaImage) Height() int   { return m.h }
func (m *cudaImage) Channels() int { return m.c }
func (m *cudaImage) n() int        { return m.w * m.h }
func (m *cudaImage) bytes() int64  { return int64(m.w*m.h*m.c) * 4 }

// plane returns the device address of channel c.
func (m *cudaImage) plane(c int) cu.DevicePtr { return m.ptr + cu.DevicePtr(c*m.n()*4) }

// NewImage allocates a zeroed w x h image with 1 to 4 channels.
func (d *CUDA) NewImage(w, h, channels int) (Image, error) {
	if w <= 0 || h <= 0 || channels < 1 || channels > 4 || w > cpuref.MaxPixels/h || w*h > cpuref.MaxPixels/channels {
		return nil, fmt.Errorf("kernels: %s: NewImage %dx%dx%d: %w", d.name, w, h, channels, ErrShape)
	}
	m := &cudaImage{w: w, h: h, c: channels, dev: d}
	err := d.do(func() error {
		p, err := d.alloc(m.bytes())
		if err != nil {
			return err
		}
		m.ptr = p
		return cu.MemsetD32Async(p, 0, int64(w*h*channels), d.stream)
	})
	if err != nil {
		return nil, fmt.Errorf("kernels: %s: NewImage: %w", d.name, err)
	}
	return m, nil
}

// Free returns img's memory to the pool. Free(nil), a second Free and an
// image of another device are no-ops.
func (d *CUDA) Free(img Image) {
	m, ok := img.(*cudaImage)
	if !ok || m == nil || m.dev != d || m.ptr == 0 {
		return
	}
	p, n := m.ptr, m.bytes()
	m.ptr = 0
	_ = d.do(func() error { d.put(p, n); return nil })
}

// img resolves a required image argument.
func (d *CUDA) img(op, name string, img Image) (*cudaImage, error) {
	if img == nil {
		return nil, fmt.Errorf("kernels: %s: %s: nil %s image: %w", d.name, op, name, ErrShape)
	}
	m, ok := img.(*cudaImage)
	if !ok || m == nil {
		return nil, fmt.Errorf("kernels: %s: %s: %s is a %T: %w", d.name, op, name, img, ErrForeignImage)
	}
	if m.dev != d {
		return nil, fmt.Errorf("kernels: %s: %s: %s belongs to another device: %w", d.name, op, name, ErrForeignImage)
	}
	if m.ptr == 0 {
		return nil, fmt.Errorf("kernels: %s: %s: %s used after Free: %w", d.name, op, name, ErrForeignImage)
	}
	return m, nil
}

// opt resolves an optional image argument (nil gives nil, nil).
func (d *CUDA) opt(op, name string, img Image) (*cudaImage, error) {
	if img == nil {
		return nil, nil
	}
	if m, ok := img.(*cudaImage); ok && m == nil {
		return nil, nil
	}
	return d.img(op, name, img)
}

func (d *CUDA) shapeErr(op, format string, args ...any) error {
	return fmt.Errorf("kernels: %s: %s: %s: %w", d.name, op, fmt.Sprintf(format, args...), ErrShape)
}

func cdims(m *cudaImage) string { return fmt.Sprintf("%dx%dx%d", m.w, m.h, m.c) }

// same checks that every non-nil image has ref's width and height.
func (d *CUDA) same(op string, ref *cudaImage, names []string, imgs ...*cudaImage) error {
	for i, m := range imgs {
		if m != nil && (m.w != ref.w || m.h != ref.h) {
			return d.shapeErr(op, "%s is %s, want %dx%d", names[i], cdims(m), ref.w, ref.h)
		}
	}
	return nil
}

// chans checks m's channel count (nil passes).
func (d *CUDA) chans(op, name string, m *cudaImage, c int) error {
	if m != nil && m.c != c {
		return d.shapeErr(op, "%s has %d channels, want %d", name, m.c, c)
	}
	return nil
}

// wrap adds the device and op to a driver error.
func (d *CUDA) wrap(op string, err error) error {
	if err == nil || errors.Is(err, ErrShape) || errors.Is(err, ErrForeignImage) || errors.Is(err, errClosed) {
		return err
	}
	return fmt.Errorf("kernels: %s: %s: %w", d.name, op, err)
}

func ptrOf(m *cudaImage) cu.DevicePtr {
	if m == nil {
		return 0
	}
	return m.ptr
}

// ---- transfers ----

// stage returns a pinned upload buffer of at least n bytes whose previous
// copy has completed, and the index of its event.
func (d *CUDA) stage(n int) ([]byte, int, error) {
	i := d.upNext
	d.upNext ^= 1
	if d.upUsed[i] {
		if err := d.upEv[i].Synchronize(); err != nil {
			return nil, 0, err
		}
	}
	if d.up[i].n < n {
		d.up[i].free()
		b, err := allocPinned(max(n, 1<<20))
		if err != nil {
			return nil, 0, fmt.Errorf("cuMemAllocHost %d bytes: %w", n, err)
		}
		d.up[i] = b
	}
	return d.up[i].bytes()[:n], i, nil
}

// upload queues the copy of staging buffer i (n bytes) to p.
func (d *CUDA) upload(p cu.DevicePtr, i, n int) error {
	if err := cu.MemcpyHtoDAsync(p, d.up[i].p, int64(n), d.stream); err != nil {
		return err
	}
	d.upUsed[i] = true
	return d.upEv[i].Record(d.stream)
}

// fetch copies n bytes from p into the pinned download buffer and waits.
func (d *CUDA) fetch(p cu.DevicePtr, n int) ([]byte, error) {
	if d.down.n < n {
		d.down.free()
		b, err := allocPinned(max(n, 1<<20))
		if err != nil {
			return nil, fmt.Errorf("cuMemAllocHost %d bytes: %w", n, err)
		}
		d.down = b
	}
	if n > 0 {
		if err := cu.MemcpyDtoHAsync(d.down.p, p, int64(n), d.stream); err != nil {
			return nil, err
		}
	}
	if err := d.stream.Synchronize(); err != nil {
		return nil, err
	}
	return d.down.bytes()[:n], nil
}

// packPlanes copies the frame's planes, without stride padding, into b:
// plane k of width pw[k] and height ph[k] at consecutive offsets.
func packPlanes(b []byte, f *frame.HostFrame, pw, ph []int) {
	off := 0
	for k := range pw {
		for y := range ph[k] {
			copy(b[off:off+pw[k]], f.Planes[k][y*f.Strides[k]:][:pw[k]])
			off += pw[k]
		}
	}
}

// unpackPlanes is the inverse of packPlanes.
func unpackPlanes(f *frame.HostFrame, b []byte, pw, ph []int) {
	off := 0
	for k := range pw {
		for y := range ph[k] {
			copy(f.Planes[k][y*f.Strides[k]:][:pw[k]], b[off:off+pw[k]])
			off += pw[k]
		}
	}
}

// planeShape returns the packed plane widths (bytes) and heights of a
// frame format at w x h.
func planeShape(fm frame.PixelFormat, w, h int) ([]int, []int, error) {
	switch fm {
	case frame.YUV420P:
		cw, ch := (w+1)/2, (h+1)/2
		return []int{w, cw, cw}, []int{h, ch, ch}, nil
	case frame.RGB24:
		return []int{3 * w}, []int{h}, nil
	case frame.Gray8:
		return []int{w}, []int{h}, nil
	}
	return nil, nil, fmt.Errorf("unsupported format %v", fm)
}

func planeBytes(pw, ph []int) int {
	n := 0
	for k := range pw {
		n += pw[k] * ph[k]
	}
	return n
}

// Upload converts a host frame into dst on the device (see
// Device.Upload): the 8-bit planes are copied up through pinned memory
// and converted by a kernel with the CPU backend's tables, so the result
// is bit-identical to the CPU backend's. It does not wait for the copy.
func (d *CUDA) Upload(dst Image, src *frame.HostFrame) error {
	const op = "Upload"
	m, err := d.img(op, "dst", dst)
	if err != nil {
		return err
	}
	if err := src.Validate(); err != nil {
		return fmt.Errorf("kernels: %s: %s: %w", d.name, op, err)
	}
	if m.w != src.Width || m.h != src.Height {
		return d.shapeErr(op, "frame %dx%d into image %s", src.Width, src.Height, cdims(m))
	}
	want := map[frame.PixelFormat]int{frame.YUV420P: 3, frame.RGB24: 3, frame.Gray8: 1}
	wc, ok := want[src.Format]
	if !ok {
		return fmt.Errorf("kernels: %s: %s: unsupported format %v", d.name, op, src.Format)
	}
	if m.c != wc {
		return d.shapeErr(op, "%v into %d channels", src.Format, m.c)
	}
	pw, ph, _ := planeShape(src.Format, src.Width, src.Height)
	nb := planeBytes(pw, ph)
	return d.wrap(op, d.do(func() error {
		buf, slot, err := d.stage(nb)
		if err != nil {
			return err
		}
		packPlanes(buf, src, pw, ph)
		raw, err := d.alloc(int64(nb))
		if err != nil {
			return err
		}
		defer d.put(raw, int64(nb))
		if err := d.upload(raw, slot, nb); err != nil {
			return err
		}
		n := m.n()
		switch src.Format {
		case frame.YUV420P:
			csi, fri := rows.FullRangeIdx(src)
			u := raw + cu.DevicePtr(pw[0]*ph[0])
			v := u + cu.DevicePtr(pw[1]*ph[1])
			return d.launch2("vfx_upload_yuv", m.w, m.h, new(kargs).p(m.ptr).p(raw).p(u).p(v).i(m.w).i(m.h).p(d.lut).i(csi*2+fri))
		case frame.RGB24:
			return d.launchGS("vfx_upload_rgb", n, new(kargs).p(m.ptr).p(raw).l(n).p(d.lut))
		default:
			return d.launchGS("vfx_upload_gray", n, new(kargs).p(m.ptr).p(raw).l(n).p(d.lut))
		}
	}))
}

// yuvOutArg is the C struct YuvOut.
type yuvOutArg [11]float32

func (d *CUDA) yuvOut(f *frame.HostFrame) *yuvOutArg {
	csi, fri := rows.FullRangeIdx(f)
	k := &d.host.YUVOut[csi][fri]
	return &yuvOutArg{k.Y0, k.YR, k.YG, k.YB, k.C0, k.UR, k.UG, k.UB, k.VR, k.VG, k.VB}
}

// Download converts src into the host frame dst (see Device.Download),
// bit-identical to the CPU backend. It waits for the result.
func (d *CUDA) Download(dst *frame.HostFrame, src Image) error {
	const op = "Download"
	m, err := d.img(op, "src", src)
	if err != nil {
		return err
	}
	if err := dst.Validate(); err != nil {
		return fmt.Errorf("kernels: %s: %s: %w", d.name, op, err)
	}
	if m.w != dst.Width || m.h != dst.Height {
		return d.shapeErr(op, "image %s into frame %dx%d", cdims(m), dst.Width, dst.Height)
	}
	want := map[frame.PixelFormat]int{frame.YUV420P: 3, frame.RGB24: 3, frame.Gray8: 1}
	wc, ok := want[dst.Format]
	if !ok {
		return fmt.Errorf("kernels: %s: %s: unsupported format %v", d.name, op, dst.Format)
	}
	if m.c != wc {
		return d.shapeErr(op, "%d channels into %v", m.c, dst.Format)
	}
	return d.wrap(op, d.do(func() error {
		return d.downloadWith(dst, func(raw, u, v cu.DevicePtr) error {
			n := m.n()
			switch dst.Format {
			case frame.YUV420P:
				return d.launch2("vfx_download_yuv", (m.w+1)/2, (m.h+1)/2,
					structArg(new(kargs).p(raw).p(u).p(v).p(m.ptr).i(m.w).i(m.h).p(d.lut), d.yuvOut(dst)))
			case frame.RGB24:
				return d.launchGS("vfx_download_rgb", n, new(kargs).p(raw).p(m.ptr).l(n).p(d.lut))
			default:
				return d.launchGS("vfx_download_gray", n, new(kargs).p(raw).p(m.ptr).l(n))
			}
		})
	}))
}

// downloadWith allocates the packed 8-bit planes of dst on the device,
// runs kernel to fill them (raw = plane 0, u and v = planes 1 and 2 of
// YUV420P), copies them down, waits and unpacks them into dst.
func (d *CUDA) downloadWith(dst *frame.HostFrame, kernel func(raw, u, v cu.DevicePtr) error) error {
	pw, ph, err := planeShape(dst.Format, dst.Width, dst.Height)
	if err != nil {
		return err
	}
	nb := planeBytes(pw, ph)
	raw, err := d.alloc(int64(nb))
	if err != nil {
		return err
	}
	defer d.put(raw, int64(nb))
	var u, v cu.DevicePtr
	if len(pw) == 3 {
		u = raw + cu.DevicePtr(pw[0]*ph[0])
		v = u + cu.DevicePtr(pw[1]*ph[1])
	}
	if err := kernel(raw, u, v); err != nil {
		return err
	}
	b, err := d.fetch(raw, nb)
	if err != nil {
		return err
	}
	unpackPlanes(dst, b, pw, ph)
	return nil
}

// ReadPixels copies src to the host, planar, channel-major (waits).
func (d *CUDA) ReadPixels(src Image) ([]float32, error) { return d.readPixels("ReadPixels", nil, src) }

// ReadPixelsTo is ReadPixels into dst's memory when its capacity holds
// src (else a new slice); it waits.
func (d *CUDA) ReadPixelsTo(dst []float32, src Image) ([]float32, error) {
	return d.readPixels("ReadPixelsTo", dst, src)
}

func (d *CUDA) readPixels(op string, dst []float32, src Image) ([]float32, error) {
	m, err := d.img(op, "src", src)
	if err != nil {
		return nil, err
	}
	n := m.w * m.h * m.c
	if cap(dst) < n {
		dst = make([]float32, n)
	}
	dst = dst[:n]
	err = d.do(func() error {
		b, err := d.fetch(m.ptr, int(m.bytes()))
		if err != nil {
			return err
		}
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), len(b)), b)
		return nil
	})
	if err != nil {
		return nil, d.wrap(op, err)
	}
	return dst, nil
}

// WritePixels copies planar, channel-major host data into dst; len(data)
// must be width*height*channels. It does not wait for the copy.
func (d *CUDA) WritePixels(dst Image, data []float32) error {
	m, err := d.img("WritePixels", "dst", dst)
	if err != nil {
		return err
	}
	if len(data) != m.w*m.h*m.c {
		return d.shapeErr("WritePixels", "%d values for a %s image", len(data), cdims(m))
	}
	nb := int(m.bytes())
	return d.wrap("WritePixels", d.do(func() error {
		buf, slot, err := d.stage(nb)
		if err != nil {
			return err
		}
		copy(buf, unsafe.Slice((*byte)(unsafe.Pointer(&data[0])), nb))
		return d.upload(m.ptr, slot, nb)
	}))
}

// Sync waits for every operation queued on the device (benchmarks and
// tests; the ops themselves never need it).
func (d *CUDA) Sync() error {
	return d.wrap("Sync", d.do(func() error { return d.stream.Synchronize() }))
}
