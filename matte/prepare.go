package matte

import (
	"context"
	"errors"
	"fmt"

	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/kernels"
)

// Segmenter is a segmentation network (an *infer.Model, wired by the
// worker): P(object) of a picture given as planar sRGB values in [0,1], at
// the picture's size.
type Segmenter interface {
	Segment(ctx context.Context, rgb []float32, w, h int, dst []float32) error
}

// FeatureSegmenter is a Segmenter that can also give its feature map of
// the picture (an *infer.Model: SegmentFeaturePlanes returns the map's
// values, width, height and planes): select's memory (memory.go) reads it
// when the fusion model has memory weights and HasFeatures.
type FeatureSegmenter interface {
	HasFeatures() bool
	SegmentFeaturePlanes(ctx context.Context, rgb []float32, w, h int, dst []float32) ([]float32, int, int, int, error)
}

// Source is a clip as Prepare reads it: the size of its frames, then its
// frames once, in order, at a size Prepare picks. The worker implements it
// over its decoder (this package links no FFmpeg). Its errors reach
// Prepare's caller unwrapped.
type Source interface {
	// Size is the size of the source's frames.
	Size(ctx context.Context) (w, h int, err error)
	// Open starts reading the frames from the first, scaled to w x h and
	// converted to packed 8-bit sRGB RGB (frame.RGB24).
	Open(ctx context.Context, w, h int) (FrameReader, error)
}

// FrameReader yields a clip's frames in order.
type FrameReader interface {
	// Next writes the next frame into f (reusing its planes) and returns
	// io.EOF after the last.
	Next(ctx context.Context, f *frame.HostFrame) error
	Close() error
}

// Keyframe is select's keyframe matte: the frame it belongs to and how to
// read it.
type Keyframe struct {
	Index int
	// Read decodes the matte at w x h into values in [0,1]. Prepare calls
	// it once the frames are read: at the flow size, then at the output
	// size.
	Read func(ctx context.Context, w, h int) ([]float32, error)
}

// PrepareOptions say what Prepare makes.
type PrepareOptions struct {
	// Width and Height are the output size.
	Width, Height int
	// Keyframe makes the mattes by select (a video's keyframe carried
	// both ways); nil makes them by auto.
	Keyframe *Keyframe
	// Net is the segmentation network (required: ErrNoNetwork).
	Net Segmenter
	// Schedule picks the frames the network runs on (zero value:
	// DefaultCPUSchedule).
	Schedule Schedule
	// Frames is the source's expected frame count (its probe's), which
	// sizes Progress until the frames are read.
	Frames int
	// Crops turns on the second network run on a crop around a small
	// subject (NetOptions.CropArea = SmallSubjectArea; off by default).
	// It keeps the frames the network runs on at the network's decode
	// size too (3 bytes a pixel), which PrepareBytes does not count.
	Crops bool
	// Progress, when set, is called after each frame read (and its
	// network run) and after each frame's matte: done steps of total,
	// twice the frames. It ends with done == total.
	Progress func(done, total int)
}

// ErrNoFrames is a source that gave no frame.
var ErrNoFrames = errors.New("matte: the source gave no frame")

// KeyframeRangeError is a keyframe index at or past the frames the source
// gave.
type KeyframeRangeError struct{ Index, Frames int }

func (e *KeyframeRangeError) Error() string {
	return fmt.Sprintf("matte: keyframe index %d, the source gave %d frames (valid 0..%d)", e.Index, e.Frames, e.Frames-1)
}

// MemoryBytes estimates what select's memory keeps for a clip of frames
// frames whose network runs on schedule s: the network's feature map of
// each frame it runs on (memFeatureBytes), when the embedded fusion model
// has memory weights; 0 otherwise.
func MemoryBytes(frames int, s Schedule) int64 {
	if !MemoryShipped() || frames <= 0 {
		return 0
	}
	if s.Every < 1 {
		s = DefaultCPUSchedule // as Prepare
	}
	every := s.ForSelect().Every
	// The frames the schedule picks, the last frame and the keyframe.
	return int64((frames+every-1)/every+2) * memFeatureBytes
}

// memFeatureBytes is one feature map of IS-Net, the built-in network: 512
// planes of 32 x 32 float32 values.
const memFeatureBytes = 512 * 32 * 32 * 4

// PrepareBytes estimates the memory Prepare keeps for a clip of frames
// frames at the output size w x h: each frame and its matte at the flow
// size (3 + 2 bytes a pixel). (PrepareOptions.Crops, off by default, adds
// the frames the network runs on at its decode size; select's memory the
// network's feature maps of those frames, 2 MB each for IS-Net: MemoryBytes.)
func PrepareBytes(frames, w, h int) int64 {
	fw, fh := FlowSize(w, h, DefaultFlowShort)
	return int64(frames) * int64(fw*fh) * (3 + 2)
}

// Prepare makes every frame's matte of a select (video) or auto job at
// the flow size, to be refined at the output size frame by frame
// (Prepared.Alpha). It reads src once, frame by frame: each frame is
// decoded at the network's size (NetLongSide, at least the flow size),
// the network runs on it when the schedule picks it (decided as the frame
// arrives: the last frame is known only at the end, and the network runs
// on it then), and the frame and the network's map are kept at the flow
// size only. Then select carries the keyframe through the clip
// (Propagate) or auto plans and makes its mattes (PlanAuto).
func Prepare(ctx context.Context, dev kernels.Device, src Source, o PrepareOptions) (*Prepared, error) {
	if o.Net == nil {
		return nil, fmt.Errorf("%w: select and auto need one", ErrNoNetwork)
	}
	if o.Schedule.Every < 1 {
		o.Schedule = DefaultCPUSchedule
	}
	key := -1
	if o.Keyframe != nil {
		key = o.Keyframe.Index
		o.Schedule = o.Schedule.ForSelect()
	}
	fw, fh := FlowSize(o.Width, o.Height, DefaultFlowShort)
	pr := &progress{fn: o.Progress, total: 2 * max(o.Frames, 1)}
	// select's memory keeps the network's features of the frames it ran
	// on, when the network gives them and the fusion model reads them.
	fs, feats := o.Net.(FeatureSegmenter)
	feats = feats && fs.HasFeatures() && o.Keyframe != nil && DefaultSelectOptions().Net.memModel()
	low, err := readClip(ctx, dev, src, fw, fh, o.Net, o.Schedule, key, clipKeeps{crops: o.Crops, features: feats}, pr.step)
	if err != nil {
		return nil, err
	}
	n := low.Len()
	pr.total, pr.steps = 2*n, n // the expected count may have been off: the frames read count
	// Modes that make no per-frame matte (a chroma key, a still) end
	// the progress here.
	defer pr.end()
	if o.Keyframe != nil {
		return prepareSelect(ctx, dev, low, o, pr)
	}
	return prepareAuto(ctx, dev, low, o, pr)
}

// prepareSelect carries the keyframe through the clip.
func prepareSelect(ctx context.Context, dev kernels.Device, low *lowClip, o PrepareOptions, pr *progress) (*Prepared, error) {
	n, idx := low.Len(), o.Keyframe.Index
	if idx >= n {
		return nil, &KeyframeRangeError{Index: idx, Frames: n}
	}
	keyLow, err := o.Keyframe.Read(ctx, low.w, low.h)
	if err != nil {
		return nil, err
	}
	m := &Prepared{dev: dev, key: idx, Method: "select"}
	if m.keyFull, err = o.Keyframe.Read(ctx, o.Width, o.Height); err != nil {
		return nil, err
	}
	key, err := dev.NewImage(low.w, low.h, 1)
	if err != nil {
		return nil, err
	}
	defer dev.Free(key)
	if err := dev.WritePixels(key, keyLow); err != nil {
		return nil, err
	}
	m.lows = make([][]uint16, n)
	so := DefaultSelectOptions()
	if o.Crops {
		so.Net.CropArea = SmallSubjectArea
	}
	if err := Propagate(ctx, dev, low, low, idx, key, so, m.collect(pr.step)); err != nil {
		return nil, fmt.Errorf("matte: select: %w", err)
	}
	return m.ready(o.Width, o.Height, low.w, low.h)
}

// prepareAuto plans auto on the clip and makes its mattes (none for a
// chroma key; the network's own map at the output size for a still).
func prepareAuto(ctx context.Context, dev kernels.Device, low *lowClip, o PrepareOptions, pr *progress) (*Prepared, error) {
	ao := DefaultAutoOptions()
	if o.Crops {
		ao.Select.Net.CropArea = SmallSubjectArea
	}
	plan, err := PlanAuto(ctx, dev, low, low, low.w, low.h, ao)
	if err != nil {
		return nil, fmt.Errorf("matte: auto: %w", err)
	}
	defer plan.Close()
	m := &Prepared{dev: dev, key: -1, Method: "auto/" + plan.Kind.String()}
	if plan.Kind == AutoChroma {
		c := plan.Chroma
		m.chroma = &c
		return m, nil
	}
	w, h := o.Width, o.Height
	if low.Len() == 1 && low.first != nil {
		// A still: the network's own map at the output size, so that
		// nothing it resolves is lost at the flow size.
		m.still = stillMatte(low, w, h, ao.Band)
		return m, nil
	}
	m.lows = make([][]uint16, low.Len())
	if err := plan.Mattes(ctx, low, m.collect(pr.step)); err != nil {
		return nil, fmt.Errorf("matte: auto: %w", err)
	}
	return m.ready(w, h, low.w, low.h)
}

// progress counts Prepare's steps for PrepareOptions.Progress.
type progress struct {
	fn           func(done, total int)
	steps, total int
}

func (p *progress) step() {
	p.steps++
	if p.fn != nil {
		p.fn(min(p.steps, p.total), p.total)
	}
}

// end reports the whole pass done, if it is not yet.
func (p *progress) end() {
	if p.fn != nil && p.steps < p.total {
		p.fn(p.total, p.total)
	}
}
