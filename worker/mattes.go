package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/infer"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/matte"
)

// Segmenter is a segmentation network (an *infer.Model): P(object) of a
// picture given as planar sRGB values in [0,1], at the picture's size.
type Segmenter interface {
	Segment(ctx context.Context, rgb []float32, w, h int, dst []float32) error
}

// NetLongSide bounds the long side of the frames given to the network: it
// resamples every input to its own size (1024x1024 for IS-Net), so more
// detail than that is never seen.
const NetLongSide = 1024

// netSize is the size frames are decoded at for the network: the source's
// size, shrunk to fit NetLongSide (even dimensions).
func netSize(w, h int) (int, int) {
	if max(w, h) <= NetLongSide {
		return w, h
	}
	s := float64(NetLongSide) / float64(max(w, h))
	return max(2, int(float64(w)*s+0.5)&^1), max(2, int(float64(h)*s+0.5)&^1)
}

// lowFrames is a clip decoded once at the flow size, kept as packed RGB24
// (3 bytes a pixel), served to package matte as sRGB-encoded floats, with
// the network's maps (matte.Objectness) of the frames it ran on.
type lowFrames struct {
	dev    kernels.Device
	w, h   int
	frames [][]byte
	buf    []float32
	nets   map[int][]uint8 // flow-size P(object) per frame the network ran on
	// first is the network's map of frame 0 at the decode size (fw x fh):
	// a still's matte is made from it at the output size.
	first  []float32
	fw, fh int
}

func (l *lowFrames) Len() int { return len(l.frames) }

func (l *lowFrames) Frame(_ context.Context, i int, dst kernels.Image) error {
	if i < 0 || i >= len(l.frames) {
		return fmt.Errorf("worker: frame %d of %d", i, len(l.frames))
	}
	n := l.w * l.h
	if l.buf == nil {
		l.buf = make([]float32, 3*n)
	}
	f := l.frames[i]
	for p := 0; p < n; p++ {
		l.buf[p] = float32(f[3*p]) / 255
		l.buf[n+p] = float32(f[3*p+1]) / 255
		l.buf[2*n+p] = float32(f[3*p+2]) / 255
	}
	return l.dev.WritePixels(dst, l.buf)
}

// Objectness serves the network's map of frame i (matte.Objectness).
func (l *lowFrames) Objectness(_ context.Context, i int, dst []float32) (bool, error) {
	m, ok := l.nets[i]
	if !ok {
		return false, nil
	}
	for k, v := range m {
		dst[k] = float32(v) / 255
	}
	return true, nil
}

// decodeLow decodes every frame of the source at the flow size w x h into
// packed RGB24. With a network, frames are decoded at netSize instead, the
// network runs on the frames sched picks (with key, the keyframe, <0 for
// none), and its maps and the frames are resampled to the flow size.
// step, when set, is called after each decoded frame (and its network
// run).
func decodeLow(ctx context.Context, dev kernels.Device, in codec.Input, lim codec.Limits, w, h int, net Segmenter, sched matte.Schedule, key int, step func()) (*lowFrames, error) {
	sw, sh := w, h
	if net != nil {
		info, err := codec.Probe(ctx, in, lim)
		if err != nil {
			return nil, classify("source", err)
		}
		sw, sh = netSize(info.Width, info.Height)
		sw, sh = max(sw, w), max(sh, h)
	}
	dec, err := codec.NewDecoder(ctx, in, lim, codec.DecodeOptions{Format: frame.RGB24, Width: sw, Height: sh})
	if err != nil {
		return nil, classify("source", err)
	}
	defer dec.Close()
	l := &lowFrames{dev: dev, w: w, h: h, nets: map[int][]uint8{}}
	var big, small kernels.Image
	var rgb, pm []float32
	if net != nil {
		if big, err = dev.NewImage(sw, sh, 3); err != nil {
			return nil, err
		}
		defer dev.Free(big)
		if small, err = dev.NewImage(w, h, 3); err != nil {
			return nil, err
		}
		defer dev.Free(small)
		rgb, pm = make([]float32, 3*sw*sh), make([]float32, sw*sh)
	}
	// segment runs the network on the frame in rgb (index i) and keeps
	// its map at the flow size.
	segment := func(i int) error {
		if err := net.Segment(ctx, rgb, sw, sh, pm); err != nil {
			return fmt.Errorf("worker: segmentation network, frame %d: %w", i, err)
		}
		lo := make([]float32, w*h)
		boxResize(lo, w, h, pm, sw, sh)
		q := make([]uint8, w*h)
		for k, v := range lo {
			q[k] = uint8(min(max(v, 0), 1)*255 + 0.5)
		}
		l.nets[i] = q
		if i == 0 {
			l.first, l.fw, l.fh = slices.Clone(pm), sw, sh
		}
		return nil
	}
	f := &frame.HostFrame{}
	last := -1
	for i := 0; ; i++ {
		if err := dec.Next(ctx, f); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, classify("source", err)
		}
		b := make([]byte, 3*w*h)
		if net == nil {
			for y := 0; y < h; y++ {
				copy(b[3*w*y:3*w*(y+1)], f.Planes[0][y*f.Strides[0]:y*f.Strides[0]+3*w])
			}
			l.frames = append(l.frames, b)
			if step != nil {
				step()
			}
			continue
		}
		n := sw * sh
		for y := 0; y < sh; y++ {
			row := f.Planes[0][y*f.Strides[0]:]
			for x := 0; x < sw; x++ {
				p := y*sw + x
				rgb[p] = float32(row[3*x]) / 255
				rgb[n+p] = float32(row[3*x+1]) / 255
				rgb[2*n+p] = float32(row[3*x+2]) / 255
			}
		}
		if sched.Runs(i, i+2, key) { // i+2: the last frame is not known yet
			if err := segment(i); err != nil {
				return nil, err
			}
		}
		last = i
		if err := dev.WritePixels(big, rgb); err != nil {
			return nil, err
		}
		if err := dev.Ops().ResizeArea(small, big); err != nil {
			return nil, err
		}
		v, err := dev.ReadPixels(small)
		if err != nil {
			return nil, err
		}
		m := w * h
		for p := 0; p < m; p++ {
			b[3*p] = uint8(min(max(v[p], 0), 1)*255 + 0.5)
			b[3*p+1] = uint8(min(max(v[m+p], 0), 1)*255 + 0.5)
			b[3*p+2] = uint8(min(max(v[2*m+p], 0), 1)*255 + 0.5)
		}
		l.frames = append(l.frames, b)
		if step != nil {
			step()
		}
	}
	if len(l.frames) == 0 {
		return nil, inputErr(job.CodeInvalidFileFormat, "source: no decodable frame")
	}
	if _, ok := l.nets[last]; net != nil && !ok {
		// The schedule always includes the last frame: rgb still holds it.
		if err := segment(last); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// boxResize shrinks (or bilinearly resamples) one plane: each output pixel
// averages the source pixels its footprint covers.
func boxResize(dst []float32, dw, dh int, src []float32, sw, sh int) {
	fx, fy := float64(sw)/float64(dw), float64(sh)/float64(dh)
	for y := 0; y < dh; y++ {
		y0 := int(float64(y) * fy)
		y1 := max(y0+1, min(sh, int(float64(y+1)*fy+0.5)))
		for x := 0; x < dw; x++ {
			x0 := int(float64(x) * fx)
			x1 := max(x0+1, min(sw, int(float64(x+1)*fx+0.5)))
			s := float32(0)
			for yy := y0; yy < y1; yy++ {
				for xx := x0; xx < x1; xx++ {
					s += src[yy*sw+xx]
				}
			}
			dst[y*dw+x] = s / float32((y1-y0)*(x1-x0))
		}
	}
}

// decodeKeyframe decodes the first frame of in as a matte at w x h, at 16
// bits (a 16-bit keyframe keeps its precision, and so does the
// resampling), into values in [0, 1].
func decodeKeyframe(ctx context.Context, in codec.Input, lim codec.Limits, w, h int) ([]float32, error) {
	dec, err := codec.NewDecoder(ctx, in, lim, codec.DecodeOptions{Format: frame.Gray16, Width: w, Height: h})
	if err != nil {
		return nil, classify("alpha", err)
	}
	defer dec.Close()
	f := &frame.HostFrame{}
	if err := dec.Next(ctx, f); err != nil {
		return nil, classify("alpha", fmt.Errorf("%w: %w", codec.ErrCorrupt, err))
	}
	out := make([]float32, 0, f.Width*f.Height)
	for y := 0; y < f.Height; y++ {
		for x := 0; x < f.Width; x++ {
			out = append(out, float32(f.Gray16At(x, y))/65535)
		}
	}
	return out, nil
}

// matteSource makes the alpha of select (video) and auto jobs in the
// compute stage. A first pass (prepareMattes) decodes the source at the
// flow size and computes every frame's matte there (select propagation
// or auto); the render pass then upsamples and refines each at the output
// size, so only low-resolution data is held across the job.
type matteSource struct {
	dev     kernels.Device
	lows    [][]uint16 // flow-size mattes per frame (65535 = 1); nil for chroma
	buf     []float32
	chroma  *kernels.ChromaParams
	key     int
	keyFull []float32 // select: the keyframe matte as given, at the output size
	still   []float32 // auto on an image: the network's matte at the output size
	refiner *matte.Refiner
	low     kernels.Image
	Method  string
}

// lowBytes estimates the memory prepareMattes holds for a clip.
func lowBytes(frames, w, h int) int64 {
	fw, fh := matte.FlowSize(w, h, matte.DefaultFlowShort)
	return int64(frames) * int64(fw*fh) * (3 + 2)
}

// prepareMattes runs the first pass of select (video) and auto jobs. It
// returns nil for the other modes and for select on an image (whose
// keyframe matte is used as given).
// frames is the source's probed frame count: the matte pass reports
// 2*frames steps to p.MatteProgress (each frame decoded, then each
// frame's matte made).
func (p *Pipeline) prepareMattes(ctx context.Context, req *RenderRequest, mode job.AlphaMode, video bool, w, h, frames int) (*matteSource, error) {
	if mode != job.AlphaAuto && (mode != job.AlphaSelect || !video) {
		return nil, nil
	}
	dev := p.Device
	lim := p.limits()
	fw, fh := matte.FlowSize(w, h, matte.DefaultFlowShort)
	if p.Net == nil {
		return nil, inputErr(job.CodeModelUnavailable, "alpha_mode %s needs the segmentation network, and this worker has none: %s", mode, ModelHint)
	}
	key := -1
	if mode == job.AlphaSelect {
		key = req.AlphaKeyframeIndex
	}
	sched := p.NetSchedule
	if sched.Every < 1 {
		sched = matte.DefaultCPUSchedule
	}
	total, steps := 2*max(frames, 1), 0
	step := func() {
		steps++
		if p.MatteProgress != nil {
			p.MatteProgress(min(steps, total), total)
		}
	}
	low, err := decodeLow(ctx, dev, *req.Source, lim, fw, fh, p.Net, sched, key, step)
	if err != nil {
		return nil, err
	}
	n := low.Len()
	total, steps = 2*n, n // the probe's count may have been off: the frames decoded count
	defer func() {
		// Modes that make no per-frame matte (a chroma key, a still) end
		// the pass here.
		if p.MatteProgress != nil && steps < total {
			p.MatteProgress(total, total)
		}
	}()
	ms := &matteSource{dev: dev, key: -1}
	collect := func(i int, m kernels.Image) error {
		step()
		v, err := dev.ReadPixels(m)
		if err != nil {
			return err
		}
		q := make([]uint16, len(v))
		for k, x := range v {
			q[k] = uint16(min(max(x, 0), 1)*65535 + 0.5)
		}
		ms.lows[i] = q
		return nil
	}
	if mode == job.AlphaSelect {
		idx := req.AlphaKeyframeIndex
		if idx >= n {
			return nil, classify("alpha_keyframe_index", fmt.Errorf("%w: alpha_keyframe_index %d, the source decodes to %d frames (valid 0..%d)",
				job.ErrKeyframeIndex, idx, n, n-1))
		}
		keyLow, err := decodeKeyframe(ctx, *req.Alpha, lim, fw, fh)
		if err != nil {
			return nil, err
		}
		if ms.keyFull, err = decodeKeyframe(ctx, *req.Alpha, lim, w, h); err != nil {
			return nil, err
		}
		key, err := dev.NewImage(fw, fh, 1)
		if err != nil {
			return nil, err
		}
		defer dev.Free(key)
		if err := dev.WritePixels(key, keyLow); err != nil {
			return nil, err
		}
		ms.key, ms.Method = idx, "select"
		ms.lows = make([][]uint16, n)
		if err := matte.Propagate(ctx, dev, low, low, idx, key, matte.DefaultSelectOptions(), collect); err != nil {
			return nil, fmt.Errorf("worker: select: %w", err)
		}
	} else {
		plan, err := matte.PlanAuto(ctx, dev, low, low, fw, fh, matte.DefaultAutoOptions())
		if err != nil {
			return nil, fmt.Errorf("worker: auto: %w", err)
		}
		defer plan.Close()
		ms.Method = "auto/" + plan.Kind.String()
		if plan.Kind == matte.AutoChroma {
			c := plan.Chroma
			ms.chroma = &c
			return ms, nil
		}
		if n == 1 && low.first != nil {
			// A still: the network's own map at the output size, so that
			// nothing it resolves is lost at the flow size.
			ms.still = make([]float32, w*h)
			infer.Resize(ms.still, w, h, low.first, low.fw, low.fh)
			band := matte.DefaultAutoOptions().Band * float32(w) / float32(fw)
			matte.SnapBand(ms.still, w, h, band)
			return ms, nil
		}
		ms.lows = make([][]uint16, n)
		if err := plan.Mattes(ctx, low, collect); err != nil {
			return nil, fmt.Errorf("worker: auto: %w", err)
		}
	}
	if ms.refiner, err = matte.NewRefiner(dev, w, h, fw, fh); err != nil {
		return nil, err
	}
	if ms.low, err = dev.NewImage(fw, fh, 1); err != nil {
		ms.close()
		return nil, err
	}
	return ms, nil
}

// alpha writes frame i's matte into dst (1 channel, output size) for the
// frame src (linear RGB, output size); a chroma key also removes the
// screen's spill from src in place.
func (m *matteSource) alpha(i int, src, dst kernels.Image) error {
	switch {
	case m.chroma != nil:
		return m.dev.Ops().ChromaKey(dst, src, src, *m.chroma)
	case i == 0 && m.still != nil:
		return m.dev.WritePixels(dst, m.still)
	case i == m.key:
		return m.dev.WritePixels(dst, m.keyFull)
	case i >= len(m.lows):
		return fmt.Errorf("worker: the source decoded to more frames (%d+) than in the matte pass (%d)", i+1, len(m.lows))
	}
	if m.buf == nil {
		m.buf = make([]float32, len(m.lows[i]))
	}
	for k, q := range m.lows[i] {
		m.buf[k] = float32(q) / 65535
	}
	if err := m.dev.WritePixels(m.low, m.buf); err != nil {
		return err
	}
	m.lows[i] = nil // done with it
	return m.refiner.Refine(dst, src, m.low)
}

func (m *matteSource) close() {
	if m == nil {
		return
	}
	if m.refiner != nil {
		m.refiner.Close()
	}
	if m.low != nil {
		m.dev.Free(m.low)
	}
}
