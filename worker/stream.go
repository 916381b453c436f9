package worker

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/matte"
	"github.com/vfxrender/vfx/render"
)

// stream is the streaming part of one job: what frames needs to decode,
// render and encode every frame.
type stream struct {
	req  *RenderRequest
	mode job.AlphaMode
	ms   *matte.Prepared // select (video) and auto: makes the matte; nil otherwise
	info codec.Info      // the source's
	w, h int             // output size
	rend *render.Renderer
	// Output files (fgPath only with req.Foreground).
	renderPath, sourcePath, alphaPath, fgPath string
	// exrDir, when set, receives the EXR pass folders; frame i is
	// numbered startFrame+i.
	exrDir     string
	startFrame int
	// copySource and copyAlpha: those outputs are stream copies of the
	// inputs, not encodes.
	copySource, copyAlpha bool
}

func (s *stream) video() bool { return s.info.Kind == codec.KindVideo }

// srcFmt is the format the source is decoded to and the render encoded
// from: YUV420P for a video, RGB24 for an image.
func (s *stream) srcFmt() frame.PixelFormat {
	if s.video() {
		return frame.YUV420P
	}
	return frame.RGB24
}

// work is one decoded frame on its way through the pipeline.
type work struct {
	src, alpha *frame.HostFrame
}

// stageDepth is the capacity of the channels between the stages. When
// the render is the only encode (source and matte stream-copied, no
// foreground, no EXR passes), two frames of slack keep the decoder, the
// render and libx264 busy (the render is the slowest stage, and libx264
// copies each frame it is given); a third held about 8 MB more at 1080p
// and changed nothing else (issue 33's note). Jobs with more encoders
// keep three.
func stageDepth(copySource, copyAlpha, more bool) int {
	if copySource && copyAlpha && !more {
		return 2
	}
	return 3
}

// inputFrames is the size of an input's frame pool (source or matte) in a
// pipeline of depth d: the frame being decoded, d queued for the compute
// stage and the one it renders; one more, for the one being encoded,
// when the input is re-encoded (not stream-copied). A copied input's
// second spare frame only let the decoder read one more frame ahead of a
// render that is the slowest stage: 3 MB at 1080p of peak RSS for nothing
// (issue 33).
func inputFrames(d int, encoded bool) int {
	if encoded {
		return d + 2
	}
	return d + 1
}

// pooledPerPixel is what the pooled 8-bit frames of a pipeline of depth d
// hold per output pixel: the source (1.5 B) and matte (1 B) frames of
// inputFrames (encodeSource, encodeAlpha: each input re-encoded), d
// render frames (1.5 B), and half a byte of rounding.
func pooledPerPixel(d int, encodeSource, encodeAlpha bool) float64 {
	return 1.5*float64(inputFrames(d, encodeSource)) + float64(inputFrames(d, encodeAlpha)) + 1.5*float64(d) + 0.5
}

// lanes are the bounded channels and frame pools that join the stages.
type lanes struct {
	srcPool, alphaPool, outPool pool
	toCompute                   chan work
	toRender, toAlpha, toSource chan *frame.HostFrame
	// The foreground gets copies of the render and matte frames: they are
	// recycled by their own encoders.
	fgColPool, fgAlphaPool pool
	toFG                   chan [2]*frame.HostFrame
	toEXR                  chan exrFrame
}

func newLanes(depth int, encodeSource, encodeAlpha bool) *lanes {
	return &lanes{
		srcPool: newPool(inputFrames(depth, encodeSource)), alphaPool: newPool(inputFrames(depth, encodeAlpha)), outPool: newPool(depth),
		toCompute: make(chan work, depth),
		toRender:  make(chan *frame.HostFrame, depth), toAlpha: make(chan *frame.HostFrame, depth),
		toSource:  make(chan *frame.HostFrame, depth),
		fgColPool: newPool(depth), fgAlphaPool: newPool(depth),
		toFG:  make(chan [2]*frame.HostFrame, depth),
		toEXR: make(chan exrFrame, 1),
	}
}

// frames runs the streaming part: decode → compute → the encoders, each
// stage in its own goroutine joined by small bounded channels, with frame
// buffers recycled through pools so that memory does not grow with length.
// setup makes s.rend: it runs once the codecs are open, while the first
// frames decode and the stream copies run (the renderer's setup leaves
// part of the cores idle, and neither needs it). It returns the number of
// render frames encoded.
func (p *Pipeline) frames(ctx context.Context, s *stream, setup func() error) (int, error) {
	cs, err := p.openCodecs(ctx, s)
	if err != nil {
		return 0, err
	}
	defer cs.close()

	ln := newLanes(stageDepth(s.copySource, s.copyAlpha, s.req.Foreground || s.exrDir != ""), !s.copySource, !s.copyAlpha)
	total := s.info.Frames
	if !s.video() {
		total = 1
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(cctx)
	for _, c := range []struct {
		on      bool
		in, out string
		what    string
	}{{s.copySource, "", s.sourcePath, "source"}, {s.copyAlpha, "", s.alphaPath, "alpha"}} {
		if !c.on {
			continue
		}
		in := *s.req.Source
		if c.what == "alpha" {
			in = *s.req.Alpha
		}
		g.Go(func() error {
			if err := codec.CopyVideo(gctx, in, c.out); err != nil {
				return fmt.Errorf("worker: copy %s: %w", c.what, err)
			}
			return nil
		})
	}
	g.Go(func() error { return decodeStage(gctx, s, cs, ln) })
	// stop ends the stages started so far after an error of this
	// goroutine's (the encoders are not started yet).
	stop := func(err error) (int, error) {
		cancel()
		_ = g.Wait()
		return 0, err
	}
	if err := setup(); err != nil {
		return stop(err)
	}
	comp, err := p.newCompute(s)
	if err != nil {
		return stop(err)
	}
	defer comp.close()
	g.Go(func() error { return comp.stage(gctx, s, cs, ln) })
	var done int
	g.Go(func() error {
		return encodeAll(gctx, ln.toRender, cs.renderEnc, ln.outPool, "render", func() {
			done++
			if p.Progress != nil {
				p.Progress(done, total)
			}
		})
	})
	g.Go(func() error { return encodeAll(gctx, ln.toAlpha, cs.alphaEnc, ln.alphaPool, "alpha", nil) })
	g.Go(func() error { return encodeAll(gctx, ln.toSource, cs.sourceEnc, ln.srcPool, "source", nil) })
	g.Go(func() error { return foregroundStage(gctx, cs.fgEnc, ln) })
	g.Go(func() error { return exrStage(gctx, s.exrDir, ln.toEXR) })
	if err := g.Wait(); err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, err
	}
	return done, nil
}

// foregroundStage encodes the foreground's frame pairs (none without a
// foreground encoder) and closes the encoder.
func foregroundStage(ctx context.Context, enc *codec.ForegroundEncoder, ln *lanes) error {
	for pair := range ln.toFG {
		if err := enc.Write(ctx, pair[0], pair[1]); err != nil {
			return fmt.Errorf("worker: encode foreground: %w", err)
		}
		ln.fgColPool.put(pair[0])
		ln.fgAlphaPool.put(pair[1])
	}
	if enc == nil {
		return nil
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("worker: finish foreground: %w", err)
	}
	return nil
}
