package matte

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/kernels"
)

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

// lowClip is a clip read once at the flow size, kept as packed RGB24
// (3 bytes a pixel), served as sRGB-encoded floats (Frames), with the
// network's maps of the frames it ran on (Objectness).
type lowClip struct {
	dev    kernels.Device
	w, h   int
	frames [][]byte
	buf    []float32
	nets   map[int][]uint8 // flow-size P(object) per frame the network ran on
	// first is the network's map of frame 0 at the decode size (fw x fh):
	// a still's matte is made from it at the output size.
	first  []float32
	fw, fh int
	// big holds the frames the network ran on at the decode size (fw x
	// fh, packed RGB24) when crops may be asked for (CropObjectness).
	big map[int][]byte
	net Segmenter
	// feats holds the network's feature maps of the frames it ran on,
	// when select's memory reads them (FeatureObjectness).
	feats map[int]FeatureMap
}

// clipKeeps says what readClip keeps beside the frames and maps.
type clipKeeps struct {
	crops    bool // the frames the network ran on at the decode size
	features bool // the network's feature maps (the net is a FeatureSegmenter)
}

// Features serves the network's feature map of frame i
// (FeatureObjectness); frame i must be one the network ran on.
func (l *lowClip) Features(_ context.Context, i int) (FeatureMap, error) {
	if l.feats == nil {
		return FeatureMap{}, ErrNoFeatures
	}
	f, ok := l.feats[i]
	if !ok {
		return FeatureMap{}, fmt.Errorf("matte: no feature map of frame %d (the network did not run on it, or gives none)", i)
	}
	return f, nil
}

func (l *lowClip) Len() int { return len(l.frames) }

func (l *lowClip) Frame(_ context.Context, i int, dst kernels.Image) error {
	if i < 0 || i >= len(l.frames) {
		return fmt.Errorf("matte: frame %d of %d", i, len(l.frames))
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

// Objectness serves the network's map of frame i (Objectness).
func (l *lowClip) Objectness(_ context.Context, i int, dst []float32) (bool, error) {
	m, ok := l.nets[i]
	if !ok {
		return false, nil
	}
	for k, v := range m {
		dst[k] = float32(v) / 255
	}
	return true, nil
}

// clipReader turns frames decoded at the network's size (sw x sh) into
// the flow size (w x h), running the network on the frames it is asked
// to.
type clipReader struct {
	dev        kernels.Device
	net        Segmenter
	sw, sh     int
	big, small kernels.Image // the frame at sw x sh and at the flow size
	rgb, pm    []float32     // the frame as planar floats, the network's map
}

func newClipReader(dev kernels.Device, net Segmenter, sw, sh, w, h int) (*clipReader, error) {
	r := &clipReader{dev: dev, net: net, sw: sw, sh: sh}
	var err error
	if r.big, err = dev.NewImage(sw, sh, 3); err != nil {
		return nil, err
	}
	if r.small, err = dev.NewImage(w, h, 3); err != nil {
		r.close()
		return nil, err
	}
	r.rgb, r.pm = make([]float32, 3*sw*sh), make([]float32, sw*sh)
	return r, nil
}

func (r *clipReader) close() {
	if r.big != nil {
		r.dev.Free(r.big)
	}
	if r.small != nil {
		r.dev.Free(r.small)
	}
}

// load converts the decoded frame f into r.rgb.
func (r *clipReader) load(f *frame.HostFrame) error {
	if f.Format != frame.RGB24 || f.Width != r.sw || f.Height != r.sh {
		return fmt.Errorf("matte: the source gave a %dx%d %v frame, want %dx%d %v", f.Width, f.Height, f.Format, r.sw, r.sh, frame.RGB24)
	}
	n := r.sw * r.sh
	for y := 0; y < r.sh; y++ {
		row := f.Planes[0][y*f.Strides[0]:]
		for x := 0; x < r.sw; x++ {
			p := y*r.sw + x
			r.rgb[p] = float32(row[3*x]) / 255
			r.rgb[n+p] = float32(row[3*x+1]) / 255
			r.rgb[2*n+p] = float32(row[3*x+2]) / 255
		}
	}
	return nil
}

// segment runs the network on the frame in r.rgb (frame i of l) and
// keeps its map at the flow size (frame 0's also at the decode size; the
// frame itself at the decode size when crops may be asked for).
func (r *clipReader) segment(ctx context.Context, l *lowClip, i int) error {
	if l.feats != nil {
		data, fw, fh, c, err := r.net.(FeatureSegmenter).SegmentFeaturePlanes(ctx, r.rgb, r.sw, r.sh, r.pm)
		if err != nil {
			return fmt.Errorf("matte: segmentation network, frame %d: %w", i, err)
		}
		l.feats[i] = FeatureMap{W: fw, H: fh, C: c, Data: data}
	} else if err := r.net.Segment(ctx, r.rgb, r.sw, r.sh, r.pm); err != nil {
		return fmt.Errorf("matte: segmentation network, frame %d: %w", i, err)
	}
	lo := make([]float32, l.w*l.h)
	boxResize(lo, l.w, l.h, r.pm, r.sw, r.sh)
	q := make([]uint8, l.w*l.h)
	for k, v := range lo {
		q[k] = code8(v)
	}
	l.nets[i] = q
	if i == 0 {
		l.first = slices.Clone(r.pm)
	}
	if l.big != nil {
		l.big[i] = packRGB(r.rgb, r.sw*r.sh)
	}
	return nil
}

// CropObjectness runs the network on the part b (flow pixels) of frame i
// as decoded for the network (fw x fh), the network zooming it to its
// input size, and writes its map shrunk to the box at the flow size into
// dst (CropObjectness). Frame i must be one the network ran on.
func (l *lowClip) CropObjectness(ctx context.Context, i int, b Box, dst []float32) error {
	f, ok := l.big[i]
	if !ok {
		return fmt.Errorf("matte: crop of frame %d: the network did not run on it", i)
	}
	sx, sy := float64(l.fw)/float64(l.w), float64(l.fh)/float64(l.h)
	x0, y0 := int(float64(b.X0)*sx), int(float64(b.Y0)*sy)
	x1 := min(l.fw, max(x0+1, int(math.Ceil(float64(b.X1)*sx))))
	y1 := min(l.fh, max(y0+1, int(math.Ceil(float64(b.Y1)*sy))))
	cw, ch := x1-x0, y1-y0
	n := cw * ch
	rgb := make([]float32, 3*n)
	for y := 0; y < ch; y++ {
		row := f[3*((y0+y)*l.fw+x0):]
		for x := 0; x < cw; x++ {
			p := y*cw + x
			rgb[p] = float32(row[3*x]) / 255
			rgb[n+p] = float32(row[3*x+1]) / 255
			rgb[2*n+p] = float32(row[3*x+2]) / 255
		}
	}
	pm := make([]float32, n)
	if err := l.net.Segment(ctx, rgb, cw, ch, pm); err != nil {
		return fmt.Errorf("matte: segmentation network, crop of frame %d: %w", i, err)
	}
	boxResize(dst[:b.W()*b.H()], b.W(), b.H(), pm, cw, ch)
	return nil
}

// shrink returns the frame in r.rgb at the flow size as packed RGB24.
func (r *clipReader) shrink() ([]byte, error) {
	if err := r.dev.WritePixels(r.big, r.rgb); err != nil {
		return nil, err
	}
	if err := r.dev.Ops().ResizeArea(r.small, r.big); err != nil {
		return nil, err
	}
	v, err := r.dev.ReadPixels(r.small)
	if err != nil {
		return nil, err
	}
	return packRGB(v, r.small.Width()*r.small.Height()), nil
}

// packRGB returns n pixels of planar values in [0,1] (3 planes of n) as
// packed RGB24 codes, rounded.
func packRGB(planar []float32, n int) []byte {
	b := make([]byte, 3*n)
	for p := 0; p < n; p++ {
		for c := 0; c < 3; c++ {
			b[3*p+c] = code8(planar[c*n+p])
		}
	}
	return b
}

// code8 is v in [0,1] (clamped) as an 8-bit code, rounded.
func code8(v float32) uint8 { return uint8(min(max(v, 0), 1)*255 + 0.5) }

// readClip reads every frame of src at the network's size (netSize, at
// least w x h), runs the network on the frames sched picks (key: the
// keyframe, < 0 for none) and keeps the frames and the network's maps at
// the flow size w x h (and, with crops, the frames the network ran on at
// the decode size, for CropObjectness). step is called after each frame
// (and its network run). The fixed schedule runs the network as the
// frames arrive; the motion schedule (Schedule.Motion) needs them all to
// plan, so it reads the source twice (segmentPlanned), and step counts
// the second pass.
func readClip(ctx context.Context, dev kernels.Device, src Source, w, h int, net Segmenter, sched Schedule, key int, keep clipKeeps, step func()) (*lowClip, error) {
	sw, sh, err := src.Size(ctx)
	if err != nil {
		return nil, err
	}
	sw, sh = netSize(sw, sh)
	sw, sh = max(sw, w), max(sh, h)
	r, err := newClipReader(dev, net, sw, sh, w, h)
	if err != nil {
		return nil, err
	}
	defer r.close()
	l := &lowClip{dev: dev, w: w, h: h, nets: map[int][]uint8{}, fw: sw, fh: sh, net: net}
	if keep.crops {
		l.big = map[int][]byte{}
	}
	if keep.features {
		l.feats = map[int]FeatureMap{}
	}
	fixed := sched.Fixed()
	err = r.pass(ctx, src, nil, func(i int) error {
		if fixed && sched.Runs(i, i+2, key) { // i+2: the last frame is not known yet
			if err := r.segment(ctx, l, i); err != nil {
				return err
			}
		}
		b, err := r.shrink()
		if err != nil {
			return err
		}
		l.frames = append(l.frames, b)
		if fixed {
			step()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	last := len(l.frames) - 1
	if last < 0 {
		return nil, ErrNoFrames
	}
	if !fixed {
		// The motion schedule: the frames' changes plan the runs, and a
		// second pass over the source runs the network on them.
		return l, r.segmentPlanned(ctx, l, src, sched, key, step)
	}
	if _, ok := l.nets[last]; !ok {
		// The schedule always includes the last frame: r.rgb still holds it.
		if err := r.segment(ctx, l, last); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// segmentPlanned plans the motion schedule's runs on the frames of l
// (Schedule.Plan, ClipChanges) and reads src again, running the network
// on the planned frames; step is called after each frame of that pass.
func (r *clipReader) segmentPlanned(ctx context.Context, l *lowClip, src Source, sched Schedule, key int, step func()) error {
	ch, err := ClipChanges(ctx, l.dev, l, l.w, l.h)
	if err != nil {
		return err
	}
	plan := sched.Plan(ch, key)
	n := len(plan)
	err = r.pass(ctx, src, func(i int) bool { return i < n && plan[i] }, func(i int) error {
		if i >= n {
			return fmt.Errorf("matte: the source gave more frames on its second read (frame %d, %d before)", i, n)
		}
		if plan[i] {
			if err := r.segment(ctx, l, i); err != nil {
				return err
			}
		}
		step()
		return nil
	})
	if err != nil {
		return err
	}
	if _, ok := l.nets[n-1]; !ok {
		return fmt.Errorf("matte: the source gave fewer frames on its second read (%d before)", n)
	}
	return nil
}

// pass decodes every frame of src at the reader's size, converts those
// need asks for (nil: all) into r.rgb and calls each with every index.
func (r *clipReader) pass(ctx context.Context, src Source, need func(i int) bool, each func(i int) error) error {
	in, err := src.Open(ctx, r.sw, r.sh)
	if err != nil {
		return err
	}
	defer in.Close()
	f := &frame.HostFrame{}
	for i := 0; ; i++ {
		if err := in.Next(ctx, f); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		if need == nil || need(i) {
			if err := r.load(f); err != nil {
				return err
			}
		}
		if err := each(i); err != nil {
			return err
		}
	}
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
