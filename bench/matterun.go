package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/vfxrender/vfx/internal/srgb"
	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/matte"
)

// MatteRun is the outcome of one synthetic sequence.
type MatteRun struct {
	Case    string
	Method  string // select, or the auto method chosen
	Scores  MatteScores
	Frames  int
	Elapsed time.Duration // matte work only: flow, propagation and refinement (not scene drawing)
}

// FramesPerSecond is the matte throughput.
func (r MatteRun) FramesPerSecond() float64 {
	return float64(r.Frames) / r.Elapsed.Seconds()
}

func (r MatteRun) String() string {
	return fmt.Sprintf("%-14s %-7s %s  %.1f frames/s", r.Case, r.Method, r.Scores, r.FramesPerSecond())
}

// hostFrames holds a clip at the flow size on the host (matte.Frames).
type hostFrames struct {
	dev    kernels.Device
	frames [][]float32
}

func (h *hostFrames) Len() int { return len(h.frames) }

func (h *hostFrames) Frame(_ context.Context, i int, dst kernels.Image) error {
	return h.dev.WritePixels(dst, h.frames[i])
}

// Clip is a sequence with ground-truth mattes: a synthetic MatteCase or a
// folder in the DAVIS layout.
type Clip interface {
	Name() string
	Size() (w, h int)
	Len() int
	// Load writes frame i as planar sRGB values in [0,1] (3*w*h) and its
	// true matte (w*h; alpha may be nil: the picture only).
	Load(i int, rgb, alpha []float32) error
}

type caseClip struct{ *MatteCase }

func (c caseClip) Name() string     { return c.MatteCase.Name }
func (c caseClip) Size() (int, int) { return c.W, c.H }
func (c caseClip) Len() int         { return c.Frames }
func (c caseClip) Load(i int, rgb, alpha []float32) error {
	if alpha == nil { // the picture only
		alpha = make([]float32, c.W*c.H)
	}
	c.Render(i, rgb, alpha)
	return nil
}

// prepared is a clip read once: its flow-size frames and exact mattes.
type prepared struct {
	refRadius int     // RealMatteConfig.RefineRadius
	refEps    float32 // RealMatteConfig.RefineEps
	c         clipInfo
	low       *hostFrames
	truth     [][]float32
	truthLow  [][]float32       // at the flow size, made on first use (lowTruth)
	picked    map[int][]float32 // select's net-select picks, for the net-select mode
	selOnNet  MatteScores       // select's scores on the picked frames
	fw, fh    int
	full      kernels.Image // 3 ch scratch at the case size
	fullA     kernels.Image // 1 ch scratch at the case size
	lowImg    kernels.Image
	rgb, lin  []float32
	ref       *matte.Refiner // refineOne's, made on first use
	lowA      kernels.Image
	changes   []float64 // each frame's change (matte.ClipChanges), made on first use
}

// runs is the frames the network runs on in a mode with keyframe key
// (< 0: none) under schedule s: the fixed schedule's, or the motion
// schedule's plan from the clip's changes.
func (p *prepared) runs(ctx context.Context, dev kernels.Device, s matte.Schedule, key int) ([]bool, error) {
	if s.Fixed() {
		return s.Plan(make([]float64, p.c.Frames), key), nil // the fixed schedule's Runs
	}
	if p.changes == nil {
		ch, err := matte.ClipChanges(ctx, dev, p.low, p.fw, p.fh)
		if err != nil {
			return nil, err
		}
		p.changes = ch
	}
	return s.Plan(p.changes, key), nil
}

// clipInfo is a Clip with its size at hand.
type clipInfo struct {
	Clip
	W, H, Frames int
}

func prepare(dev kernels.Device, cl Clip) (*prepared, error) {
	w, h := cl.Size()
	c := clipInfo{Clip: cl, W: w, H: h, Frames: cl.Len()}
	p := &prepared{c: c, low: &hostFrames{dev: dev}}
	p.fw, p.fh = matte.FlowSize(c.W, c.H, matte.DefaultFlowShort)
	var err error
	if p.full, err = dev.NewImage(c.W, c.H, 3); err != nil {
		return nil, err
	}
	if p.fullA, err = dev.NewImage(c.W, c.H, 1); err != nil {
		return nil, err
	}
	if p.lowImg, err = dev.NewImage(p.fw, p.fh, 3); err != nil {
		return nil, err
	}
	n := c.W * c.H
	p.rgb, p.lin = make([]float32, 3*n), make([]float32, 3*n)
	for i := 0; i < c.Frames; i++ {
		a := make([]float32, n)
		if err := c.Load(i, p.rgb, a); err != nil {
			return nil, err
		}
		p.truth = append(p.truth, a)
		if err := dev.WritePixels(p.full, p.rgb); err != nil {
			return nil, err
		}
		if err := dev.Ops().ResizeArea(p.lowImg, p.full); err != nil {
			return nil, err
		}
		lp, err := dev.ReadPixels(p.lowImg)
		if err != nil {
			return nil, err
		}
		p.low.frames = append(p.low.frames, lp)
	}
	return p, nil
}

func (p *prepared) close(dev kernels.Device) {
	if p.ref != nil {
		p.ref.Close()
		dev.Free(p.lowA)
	}
	dev.Free(p.full)
	dev.Free(p.fullA)
	dev.Free(p.lowImg)
}

// linearFrame uploads frame i of the case, in linear light, into p.full.
func (p *prepared) linearFrame(dev kernels.Device, i int) error {
	a := make([]float32, p.c.W*p.c.H)
	if err := p.c.Load(i, p.rgb, a); err != nil {
		return err
	}
	for k, v := range p.rgb {
		p.lin[k] = srgb.ToLinear32(v)
	}
	return dev.WritePixels(p.full, p.lin)
}

// refineAll refines the flow-size mattes at the case size and scores
// them; key >= 0 is a frame whose exact matte is used as given.
func (p *prepared) refineAll(dev kernels.Device, lows [][]float32, key int, elapsed *time.Duration) (MatteScores, error) {
	c := p.c
	sc := &Scorer{W: c.W, H: c.H}
	ref, err := matte.NewRefiner(dev, c.W, c.H, p.fw, p.fh)
	if err != nil {
		return MatteScores{}, err
	}
	defer ref.Close()
	low, err := dev.NewImage(p.fw, p.fh, 1)
	if err != nil {
		return MatteScores{}, err
	}
	defer dev.Free(low)
	for i := 0; i < c.Frames; i++ {
		if i == key {
			sc.Add(p.truth[i], p.truth[i])
			continue
		}
		if err := p.linearFrame(dev, i); err != nil {
			return MatteScores{}, err
		}
		t0 := time.Now()
		if err := dev.WritePixels(low, lows[i]); err != nil {
			return MatteScores{}, err
		}
		if err := ref.Refine(p.fullA, p.full, low); err != nil {
			return MatteScores{}, err
		}
		m, err := dev.ReadPixels(p.fullA)
		if err != nil {
			return MatteScores{}, err
		}
		*elapsed += time.Since(t0)
		sc.Add(m, p.truth[i])
	}
	return sc.Scores(), nil
}

func collect(lows [][]float32, dev kernels.Device) func(i int, m kernels.Image) error {
	return func(i int, m kernels.Image) error {
		v, err := dev.ReadPixels(m)
		lows[i] = v
		return err
	}
}

// RunSelect propagates the exact matte of frame key through the case
// and scores the refined mattes.
func RunSelect(ctx context.Context, dev kernels.Device, c *MatteCase, key int, o matte.SelectOptions) (MatteRun, error) {
	return RunSelectClip(ctx, dev, caseClip{c}, key, o)
}

// RunSelectClip is RunSelect on any clip.
func RunSelectClip(ctx context.Context, dev kernels.Device, cl Clip, key int, o matte.SelectOptions) (MatteRun, error) {
	p, err := prepare(dev, cl)
	if err != nil {
		return MatteRun{}, err
	}
	defer p.close(dev)
	c := p.c
	if key < 0 || key >= c.Frames {
		return MatteRun{}, fmt.Errorf("bench: keyframe %d outside 0..%d", key, c.Frames-1)
	}
	run := MatteRun{Case: c.Name(), Method: "select", Frames: c.Frames}
	keyLow, err := dev.NewImage(p.fw, p.fh, 1)
	if err != nil {
		return run, err
	}
	defer dev.Free(keyLow)
	t0 := time.Now()
	if err := dev.WritePixels(p.fullA, p.truth[key]); err != nil {
		return run, err
	}
	if err := dev.Ops().ResizeArea(keyLow, p.fullA); err != nil {
		return run, err
	}
	lows := make([][]float32, c.Frames)
	if err := matte.Propagate(ctx, dev, p.low, nil, key, keyLow, o, collect(lows, dev)); err != nil {
		return run, err
	}
	run.Elapsed = time.Since(t0)
	run.Scores, err = p.refineAll(dev, lows, key, &run.Elapsed)
	return run, err
}

// RunAuto runs auto on the case and scores it; without a network only
// cases with a chroma screen can run (else matte.ErrNoNetwork).
func RunAuto(ctx context.Context, dev kernels.Device, mc *MatteCase, o matte.AutoOptions) (MatteRun, error) {
	p, err := prepare(dev, caseClip{mc})
	if err != nil {
		return MatteRun{}, err
	}
	defer p.close(dev)
	c := p.c
	run := MatteRun{Case: c.Name(), Frames: c.Frames}
	t0 := time.Now()
	plan, err := matte.PlanAuto(ctx, dev, p.low, nil, p.fw, p.fh, o)
	if err != nil {
		return run, err
	}
	defer plan.Close()
	run.Method = plan.Kind.String()
	run.Elapsed = time.Since(t0)
	if plan.Kind == matte.AutoChroma {
		sc := &Scorer{W: c.W, H: c.H}
		for i := 0; i < c.Frames; i++ {
			if err := p.linearFrame(dev, i); err != nil {
				return run, err
			}
			t1 := time.Now()
			if err := dev.Ops().ChromaKey(p.fullA, p.full, p.full, plan.Chroma); err != nil {
				return run, err
			}
			m, err := dev.ReadPixels(p.fullA)
			if err != nil {
				return run, err
			}
			run.Elapsed += time.Since(t1)
			sc.Add(m, p.truth[i])
		}
		run.Scores = sc.Scores()
		return run, nil
	}
	lows := make([][]float32, c.Frames)
	t1 := time.Now()
	if err := plan.Mattes(ctx, p.low, collect(lows, dev)); err != nil {
		return run, err
	}
	run.Elapsed += time.Since(t1)
	run.Scores, err = p.refineAll(dev, lows, -1, &run.Elapsed)
	return run, err
}
