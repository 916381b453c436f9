package bench

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/render"
)

// timedOps wraps a device's ops and adds up the wall time of the calls
// that the render makes per frame, by op and image size (ops it does not
// override pass through untimed). One worker: the times add up to the
// frame's CPU.
type timedOps struct {
	kernels.Ops
	t map[string]time.Duration
	n map[string]int
}

func (o *timedOps) tm(name string, f func() error) error {
	t0 := time.Now()
	err := f()
	o.t[name] += time.Since(t0)
	o.n[name]++
	return err
}

func dimsOf(m kernels.Image) string {
	return fmt.Sprintf("%dx%dx%d", m.Width(), m.Height(), m.Channels())
}

func (o *timedOps) Luma(d, s kernels.Image) error {
	return o.tm("Luma", func() error { return o.Ops.Luma(d, s) })
}
func (o *timedOps) ResizeBilinear(d, s kernels.Image) error {
	return o.tm("ResizeBilinear "+dimsOf(d), func() error { return o.Ops.ResizeBilinear(d, s) })
}
func (o *timedOps) ResizeArea(d, s kernels.Image) error {
	return o.tm("ResizeArea "+dimsOf(d), func() error { return o.Ops.ResizeArea(d, s) })
}
func (o *timedOps) GaussianBlur(d, s kernels.Image, sigma float32) error {
	return o.tm(fmt.Sprintf("GaussianBlur %s sigma %.1f", dimsOf(d), sigma), func() error { return o.Ops.GaussianBlur(d, s, sigma) })
}
func (o *timedOps) MaskedStats(s, m kernels.Image) (st kernels.Stats, err error) {
	err = o.tm("MaskedStats", func() error { st, err = o.Ops.MaskedStats(s, m); return err })
	return st, err
}
func (o *timedOps) SHNormalEquations(s, n, m kernels.Image) (a [81]float64, b [9]float64, err error) {
	err = o.tm("SHNormalEquations", func() error { a, b, err = o.Ops.SHNormalEquations(s, n, m); return err })
	return a, b, err
}
func (o *timedOps) SHEval(d, n kernels.Image, c []kernels.SH9) error {
	return o.tm("SHEval "+dimsOf(d), func() error { return o.Ops.SHEval(d, n, c) })
}
func (o *timedOps) RatioRelight(d, s, en, eo, a kernels.Image, eps, maxGain float32) error {
	return o.tm("RatioRelight "+dimsOf(d), func() error { return o.Ops.RatioRelight(d, s, en, eo, a, eps, maxGain) })
}
func (o *timedOps) LabStats(s, m kernels.Image) (st kernels.LabStats, err error) {
	err = o.tm("LabStats", func() error { st, err = o.Ops.LabStats(s, m); return err })
	return st, err
}
func (o *timedOps) LabTransfer(d, s, m kernels.Image, from, to kernels.LabStats, k float32) error {
	return o.tm("LabTransfer "+dimsOf(d), func() error { return o.Ops.LabTransfer(d, s, m, from, to, k) })
}
func (o *timedOps) HueBound(d, g, r, m kernels.Image, p kernels.HueParams) error {
	return o.tm("HueBound "+dimsOf(d), func() error { return o.Ops.HueBound(d, g, r, m, p) })
}
func (o *timedOps) DistanceTransform(d, m kernels.Image, th float32) error {
	return o.tm("DistanceTransform", func() error { return o.Ops.DistanceTransform(d, m, th) })
}
func (o *timedOps) NormalsFromMatte(d, dist, detail kernels.Image, r, k float32) error {
	return o.tm("NormalsFromMatte", func() error { return o.Ops.NormalsFromMatte(d, dist, detail, r, k) })
}
func (o *timedOps) ResizeAreaFrame(d kernels.Image, s *frame.HostFrame) error {
	return o.tm(fmt.Sprintf("ResizeAreaFrame %v", s.Format), func() error { return o.Ops.ResizeAreaFrame(d, s) })
}
func (o *timedOps) GainCompositeLookFrame(dst, src, alpha *frame.HostFrame, bgCodes *kernels.PlateCodes, g, bg, bgBlur, ab kernels.Image, look kernels.CompositeLook, wrap, maxV float32) error {
	return o.tm("GainCompositeLookFrame", func() error {
		return o.Ops.GainCompositeLookFrame(dst, src, alpha, bgCodes, g, bg, bgBlur, ab, look, wrap, maxV)
	})
}

// timedDevice hands out the timed ops.
type timedDevice struct {
	kernels.Device
	ops *timedOps
}

func (d *timedDevice) Ops() kernels.Ops { return d.ops }

// BenchmarkStageRenderOps1080p is BenchmarkStageRender1080p on one CPU
// worker with every op the frame calls timed: -v logs the ms a frame of
// each op (by size) and their sum, to show where a frame's CPU goes.
func BenchmarkStageRenderOps1080p(b *testing.B) {
	p, _, srcs, mattes := stageFixture(b)
	ref := decodeAll(b, p.Reference, frame.RGB24)[0]
	cpu := kernels.NewCPU(1)
	defer cpu.Close()
	ops := &timedOps{Ops: cpu.Ops(), t: map[string]time.Duration{}, n: map[string]int{}}
	r, out := stageRenderer(b, &timedDevice{Device: cpu, ops: ops},
		render.Params{Prompt: "warm key light from the left", Reference: ref, Seed: 1, Width: 1920, Height: 1080}, srcs[0], mattes[0])
	clear(ops.t)
	clear(ops.n)
	b.ResetTimer()
	renderFrames(b, r, out, srcs, mattes)
	b.StopTimer()
	names := make([]string, 0, len(ops.t))
	var sum time.Duration
	for k, v := range ops.t {
		names = append(names, k)
		sum += v
	}
	if sum == 0 {
		b.Fatal("no op was timed")
	}
	sort.Slice(names, func(i, j int) bool { return ops.t[names[i]] > ops.t[names[j]] })
	ms := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(b.N) }
	var sb strings.Builder
	for _, k := range names {
		fmt.Fprintf(&sb, "\n%-44s %7.3f ms a frame  %4.1f calls", k, ms(ops.t[k]), float64(ops.n[k])/float64(b.N))
	}
	b.Logf("timed ops %.2f ms a frame:%s", ms(sum), sb.String())
	b.ReportMetric(ms(sum), "op-ms/frame")
}
