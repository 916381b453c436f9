package worker

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/render"
)

// decodeStage decodes the source (and the matte, when it is decoded) frame
// by frame into pooled frames and sends them to the compute stage. Without
// a decoded matte it sends an all-white one (fill) or one for the compute
// stage to fill (select and auto). It checks that the matte has the
// source's frame count.
func decodeStage(ctx context.Context, s *stream, cs *codecs, ln *lanes) error {
	defer close(ln.toCompute)
	for i := 0; ; i++ {
		f, err := ln.srcPool.get(ctx)
		if err != nil {
			return err
		}
		if err := cs.srcDec.Next(ctx, f); err != nil {
			if errors.Is(err, io.EOF) {
				if i == 0 {
					return inputErr(job.CodeInvalidFileFormat, "source: no decodable frame")
				}
				if cs.mDec != nil {
					if err := cs.mDec.Next(ctx, &frame.HostFrame{}); err == nil {
						return classify("alpha", fmt.Errorf("%w: the matte has more frames than the source's %d", job.ErrFrameCountMismatch, i))
					}
				}
				return nil
			}
			return classify("source", err)
		}
		a, err := ln.alphaPool.get(ctx)
		if err != nil {
			return err
		}
		if cs.mDec != nil {
			if err := cs.mDec.Next(ctx, a); err != nil {
				if errors.Is(err, io.EOF) {
					return classify("alpha", fmt.Errorf("%w: the matte ends after %d frames", job.ErrFrameCountMismatch, i))
				}
				return classify("alpha", err)
			}
		} else {
			a.Format, a.Width, a.Height = frame.Gray8, s.w, s.h
			if err := a.Alloc(); err != nil {
				return err
			}
			if s.ms == nil { // fill; else the compute stage makes it
				for k := range a.Planes[0] {
					a.Planes[0][k] = 255
				}
			}
		}
		a.PTS = f.PTS
		if err := send(ctx, ln.toCompute, work{src: f, alpha: a}); err != nil {
			return err
		}
	}
}

// compute is the render stage's device state. Jobs whose matte comes
// decoded (custom, fill, select on an image) render straight from the
// host frames (Renderer.FrameFromHost: no full-resolution float image).
// Select on a video and auto make the matte on the device from the
// uploaded source, so they keep the source and matte images.
type compute struct {
	dev          kernels.Device
	srcImg, aImg kernels.Image // nil unless the matte is made on the device or passes are made
	// Jobs that ask for the EXR passes or the clean foreground render
	// the passes (render.Passes); fgImg and fgHost hold the foreground's
	// unpremultiplied colour.
	passes *render.Passes
	fgImg  kernels.Image
	fgHost *frame.HostFrame
	// fgAlpha receives the placed matte of a job with a placement, for
	// the foreground (whose colour is placed too); nil otherwise.
	fgAlpha *frame.HostFrame
}

func (p *Pipeline) newCompute(s *stream) (*compute, error) {
	c := &compute{dev: p.Device}
	if s.ms == nil && !s.req.passes() {
		return c, nil
	}
	var err error
	if c.srcImg, err = c.dev.NewImage(s.w, s.h, 3); err != nil {
		return nil, err
	}
	if c.aImg, err = c.dev.NewImage(s.w, s.h, 1); err != nil {
		c.close()
		return nil, err
	}
	if !s.req.passes() {
		return c, nil
	}
	newPasses := s.rend.NewPasses
	if s.exrDir == "" {
		newPasses = s.rend.NewForegroundPasses // the clean foreground only
	}
	if c.passes, err = newPasses(); err != nil {
		c.close()
		return nil, err
	}
	if s.req.Foreground {
		if c.fgImg, err = c.dev.NewImage(s.w, s.h, 3); err != nil {
			c.close()
			return nil, err
		}
		if c.fgHost, err = frame.New(s.srcFmt(), s.w, s.h); err != nil {
			c.close()
			return nil, err
		}
		c.fgHost.ColorSpace = frame.BT709
		if s.req.Placement != nil {
			if c.fgAlpha, err = frame.New(frame.Gray8, s.w, s.h); err != nil {
				c.close()
				return nil, err
			}
		}
	}
	return c, nil
}

func (c *compute) close() {
	c.dev.Free(c.srcImg)
	c.dev.Free(c.aImg)
	c.dev.Free(c.fgImg)
	c.passes.Free()
}

// stage renders every frame of ln.toCompute into a pooled output frame and
// hands the render, matte and source frames to their encoders (or back to
// their pools when that output is a stream copy).
func (c *compute) stage(ctx context.Context, s *stream, cs *codecs, ln *lanes) error {
	defer close(ln.toRender)
	defer close(ln.toAlpha)
	defer close(ln.toSource)
	defer close(ln.toFG)
	defer close(ln.toEXR)
	for i := 0; ; i++ {
		var wk work
		select {
		case v, ok := <-ln.toCompute:
			if !ok {
				return nil
			}
			wk = v
		case <-ctx.Done():
			return ctx.Err()
		}
		out, err := ln.outPool.get(ctx)
		if err != nil {
			return err
		}
		out.Format, out.Width, out.Height = s.srcFmt(), s.w, s.h
		out.ColorSpace, out.FullRange = frame.BT709, false
		if err := out.Alloc(); err != nil {
			return err
		}
		if err := c.render(ctx, s, i, out, wk); err != nil {
			return err
		}
		out.PTS = wk.src.PTS
		if s.exrDir != "" {
			imgs, err := readPasses(c.dev, c.passes, s.w, s.h, s.req.EXRColorSpace)
			if err != nil {
				return err
			}
			if err := send(ctx, ln.toEXR, exrFrame{number: s.startFrame + i, images: imgs}); err != nil {
				return err
			}
		}
		if cs.fgEnc != nil {
			fgCol := out
			if c.fgHost != nil { // the clean foreground, not the composite's subject
				if err := s.rend.Unpremultiply(c.fgImg, c.passes); err != nil {
					return err
				}
				if err := c.dev.Download(c.fgHost, c.fgImg); err != nil {
					return fmt.Errorf("worker: download foreground: %w", err)
				}
				c.fgHost.PTS = out.PTS
				fgCol = c.fgHost
			}
			fgA := wk.alpha
			if pa := s.rend.PlacedAlpha(); pa != nil && c.fgAlpha != nil {
				if err := c.dev.Download(c.fgAlpha, pa); err != nil {
					return fmt.Errorf("worker: download placed matte: %w", err)
				}
				c.fgAlpha.PTS = out.PTS
				fgA = c.fgAlpha
			}
			pair, err := copyPair(ctx, ln.fgColPool, ln.fgAlphaPool, fgCol, fgA)
			if err != nil {
				return err
			}
			if err := send(ctx, ln.toFG, pair); err != nil {
				return err
			}
		}
		if err := send(ctx, ln.toRender, out); err != nil {
			return err
		}
		if cs.alphaEnc != nil {
			if err := send(ctx, ln.toAlpha, wk.alpha); err != nil {
				return err
			}
		} else {
			ln.alphaPool.put(wk.alpha)
		}
		if cs.sourceEnc != nil {
			if err := send(ctx, ln.toSource, wk.src); err != nil {
				return err
			}
		} else {
			ln.srcPool.put(wk.src)
		}
	}
}

// render renders frame i of the job into out.
func (c *compute) render(ctx context.Context, s *stream, i int, out *frame.HostFrame, wk work) error {
	if c.passes != nil {
		return c.renderPasses(ctx, s, i, out, wk)
	}
	if s.ms == nil {
		if err := s.rend.FrameFromHost(ctx, out, wk.src, wk.alpha); err != nil {
			return fmt.Errorf("worker: render: %w", err)
		}
		return nil
	}
	dev := c.dev
	if err := dev.Upload(c.srcImg, wk.src); err != nil {
		return fmt.Errorf("worker: upload source: %w", err)
	}
	if err := s.ms.Alpha(i, c.srcImg, c.aImg); err != nil {
		return fmt.Errorf("worker: matte of frame %d: %w", i, err)
	}
	// The render uses exactly the 8-bit matte written to the alpha file
	// (and so one clamped to [0,1]).
	if err := dev.Download(wk.alpha, c.aImg); err != nil {
		return fmt.Errorf("worker: download matte: %w", err)
	}
	if err := dev.Upload(c.aImg, wk.alpha); err != nil {
		return fmt.Errorf("worker: upload matte: %w", err)
	}
	if err := s.rend.FrameHost(ctx, out, c.srcImg, c.aImg); err != nil {
		return fmt.Errorf("worker: render: %w", err)
	}
	return nil
}

// renderPasses renders frame i of the job with its passes (c.passes) and
// downloads the composite into out.
func (c *compute) renderPasses(ctx context.Context, s *stream, i int, out *frame.HostFrame, wk work) error {
	dev := c.dev
	if err := dev.Upload(c.srcImg, wk.src); err != nil {
		return fmt.Errorf("worker: upload source: %w", err)
	}
	if s.ms != nil {
		if err := s.ms.Alpha(i, c.srcImg, c.aImg); err != nil {
			return fmt.Errorf("worker: matte of frame %d: %w", i, err)
		}
		if err := dev.Download(wk.alpha, c.aImg); err != nil {
			return fmt.Errorf("worker: download matte: %w", err)
		}
	}
	// The 8-bit matte, as written to the alpha file (fill: all 255).
	if err := dev.Upload(c.aImg, wk.alpha); err != nil {
		return fmt.Errorf("worker: upload matte: %w", err)
	}
	if err := s.rend.FramePasses(ctx, c.passes, c.srcImg, c.aImg); err != nil {
		return fmt.Errorf("worker: render: %w", err)
	}
	if err := dev.Download(out, c.passes.Composite); err != nil {
		return fmt.Errorf("worker: download render: %w", err)
	}
	return nil
}
