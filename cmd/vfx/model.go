package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/vfxrender/vfx/infer"
	"github.com/vfxrender/vfx/matte"
)

// modelOpts are the segmentation network's flags, shared by vfx render,
// worker, serve and bench matte.
type modelOpts struct {
	dir, card, provider *string
	// precision is --model-precision: int8 (the card's calibration, on
	// the CPU provider) or fp32.
	precision     *string
	threads, size *int
	// every is --model-every (nil where the command has no such flag:
	// bench matte has its own --every).
	every *int
	// features loads the built-in card with its feature output
	// (infer.ISNetFeatures) even when no memory weights ship (the bench).
	features bool
}

func modelFlags(fs *flag.FlagSet, e *env) *modelOpts {
	return &modelOpts{
		dir:       fs.String("model-dir", e.str("VFX_MODEL_DIR", infer.DefaultDir()), "folder with ONNX Runtime's library and the model files (make models installs them) [VFX_MODEL_DIR]"),
		card:      fs.String("model-card", e.str("VFX_MODEL_CARD", ""), "JSON model card of another segmentation model (default: the built-in IS-Net card) [VFX_MODEL_CARD]"),
		provider:  fs.String("model-provider", e.str("VFX_MODEL_PROVIDER", "cpu"), "ONNX Runtime execution provider: cpu, or cuda (needs ONNX Runtime's CUDA provider, CUDA 12 and cuDNN 9; not verified yet) [VFX_MODEL_PROVIDER]"),
		threads:   fs.Int("model-threads", 0, "ONNX Runtime threads (0 = all cores)"),
		precision: fs.String("model-precision", e.str("VFX_MODEL_PRECISION", "int8"), "the network's arithmetic on the cpu provider: int8 (8-bit, calibrated: about 2.7 times faster, maps within about 1% of fp32's; models whose card has no calibration run fp32) or fp32 [VFX_MODEL_PRECISION]"),
		size:      fs.Int("model-size", e.int("VFX_MODEL_SIZE", 0), "run the network at this square input size (a multiple of 32 up to the card's; 0 = the schedule's default for the provider) [VFX_MODEL_SIZE]"),
	}
}

// everyFlag adds --model-every [VFX_MODEL_EVERY] (vfx render, worker,
// serve): how often the network runs on a select or auto video.
func (m *modelOpts) everyFlag(fs *flag.FlagSet, e *env) {
	g := matte.DefaultGPUSchedule
	c := matte.DefaultCPUSchedule
	m.every = fs.Int("model-every", e.int("VFX_MODEL_EVERY", 0), fmt.Sprintf("run the segmentation network on every k-th frame of a select or auto video, 1..%d, carrying the matte between by motion (0 = the provider's default: on cpu every %d for auto, every %d for select; on cuda every %d for auto, every %d for select). A smaller step runs the network more often (on a CPU about 0.4 s a run in 8 bits, 1-1.7 s in fp32) and helps auto, not select: docs/mattes.md, Schedule [VFX_MODEL_EVERY]",
		matte.MaxEvery, c.Every, c.ForSelect().Every, g.Every, g.ForSelect().Every))
}

// check refuses flag values the model cannot run with before any work
// starts (a usage error).
func (m *modelOpts) check() error {
	if *m.precision != "int8" && *m.precision != "fp32" {
		return usageError{fmt.Sprintf("--model-precision %q: want int8 or fp32", *m.precision)}
	}
	if m.every != nil && (*m.every < 0 || *m.every > matte.MaxEvery) {
		return usageError{fmt.Sprintf("--model-every %d: want 1..%d, or 0 for the provider's default", *m.every, matte.MaxEvery)}
	}
	return nil
}

// schedule is the network's schedule: matte.DefaultGPUSchedule with the
// CUDA provider, else matte.DefaultCPUSchedule; --model-every sets its
// step.
func (m *modelOpts) schedule() matte.Schedule {
	s := matte.DefaultCPUSchedule
	if *m.provider == string(infer.CUDA) {
		s = matte.DefaultGPUSchedule
	}
	if m.every != nil && *m.every > 0 {
		s.Every, s.SelectEvery = *m.every, 0
	}
	return s
}

// load opens the runtime and the model; close releases them.
func (m *modelOpts) load(ctx context.Context) (*infer.Model, infer.Card, func(), error) {
	card := infer.ISNetIMGLY()
	if m.features || matte.MemoryShipped() {
		card.Features = infer.ISNetFeatures
	}
	if *m.card != "" {
		var err error
		if card, err = infer.ReadCard(*m.card); err != nil {
			return nil, card, nil, err
		}
	}
	if *m.precision == "fp32" {
		card.Int8 = nil
	}
	// An explicit size must work; the schedule's default applies to
	// scalable models only, never above their own size.
	size := *m.size
	if s := m.schedule().Size; size == 0 && card.Scalable && s > 0 && s < card.Width {
		size = s
	}
	if size != 0 {
		var err error
		if card, err = card.At(size); err != nil {
			return nil, card, nil, err
		}
	}
	rt, err := infer.Open(infer.Options{Dir: *m.dir, Provider: infer.Provider(*m.provider), Threads: *m.threads})
	if err != nil {
		return nil, card, nil, err
	}
	mod, err := rt.Load(ctx, card)
	if err != nil {
		rt.Close()
		return nil, card, nil, fmt.Errorf("%w", err)
	}
	return mod, card, func() { rt.Close() }, nil
}

// printModel says which segmentation model runs, under which licence, and
// whether it and ONNX Runtime are installed (vfx version).
func printModel(w io.Writer, getenv func(string) string) {
	e := &env{get: getenv}
	dir := e.str("VFX_MODEL_DIR", infer.DefaultDir())
	card := infer.ISNetIMGLY()
	if p := e.str("VFX_MODEL_CARD", ""); p != "" {
		c, err := infer.ReadCard(p)
		if err != nil {
			fmt.Fprintf(w, "segmentation model: %v\n", err)
			return
		}
		card = c
	}
	state := func(path string) string {
		if _, err := os.Stat(path); err != nil {
			return "NOT INSTALLED (make models)"
		}
		return "installed"
	}
	fmt.Fprintf(w, "segmentation model: %s, licence %s, from %s: %s (%s)\n", card.Name, card.Licence, card.Source,
		state(filepath.Join(dir, card.File)), filepath.Join(dir, card.File))
	prec := "fp32 on cpu (its card has no 8-bit calibration)"
	if card.Int8 != nil {
		prec = fmt.Sprintf("8-bit on cpu (%d calibrated ranges; VFX_MODEL_PRECISION=fp32 for fp32), fp16 on cuda", len(card.Int8.Ranges))
	}
	if e.str("VFX_MODEL_PRECISION", "int8") == "fp32" {
		prec = "fp32 on cpu (VFX_MODEL_PRECISION=fp32)"
	}
	fmt.Fprintf(w, "segmentation arithmetic: %s\n", prec)
	fmt.Fprintf(w, "onnx runtime: %s, licence MIT: %s\n", filepath.Join(dir, infer.LibraryFile), state(filepath.Join(dir, infer.LibraryFile)))
}

// warmModel pays the network's slow first runs in the background at
// start (infer.Model.Warm), so that a worker's first select or auto job
// does not; a job that starts meanwhile waits for its turn on the model.
func warmModel(ctx context.Context, log *zap.Logger, m *infer.Model) {
	t0 := time.Now()
	if err := m.Warm(ctx); err != nil {
		if ctx.Err() == nil {
			log.Warn("segmentation model warm-up failed", zap.Error(err))
		}
		return
	}
	log.Info("segmentation model warm", zap.Duration("took", time.Since(t0)))
}
