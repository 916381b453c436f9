package worker

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/job"
)

// TrimFrames narrows a video job to source frames first..last (0-based,
// inclusive): it cuts the source, and a custom matte video, into lossless
// videos in dir (codec.TrimVideo), points req at them and counts a select
// keyframe's index from first. What `vfx render --frames` and a job's
// frames field do. A range past the source's last frame is an
// *job.InputError INVALID_FRAME_RANGE, and a select keyframe outside the
// range INVALID_KEYFRAME_INDEX, both found before any frame is decoded.
func TrimFrames(ctx context.Context, req *RenderRequest, first, last int, dir string, lim codec.Limits) error {
	if req.GenerationType != "video" {
		return inputErr(job.CodeInvalidFrameRange, "frames %d-%d: a frame range needs a video job", first, last)
	}
	if req.Source == nil {
		return inputErr(job.CodeMissingSource, "source is required")
	}
	info, err := codec.Probe(ctx, *req.Source, lim)
	if err != nil {
		return classify("source", err)
	}
	if info.Kind != codec.KindVideo {
		return inputErr(job.CodeInvalidFileFormat, "source: a video job needs a video, got %s image", info.Container)
	}
	if _, _, err := job.CheckFrames(fmt.Sprintf("%d-%d", first, last), info.Frames); err != nil {
		return err
	}
	if req.AlphaMode == string(job.AlphaSelect) {
		if req.AlphaKeyframeIndex < first || req.AlphaKeyframeIndex > last {
			return inputErr(job.CodeInvalidKeyframeIndex, "alpha_keyframe_index %d is outside frames %d-%d: the keyframe must be one of the frames rendered",
				req.AlphaKeyframeIndex, first, last)
		}
	}
	dst := filepath.Join(dir, "source-frames.mp4")
	if err := codec.TrimVideo(ctx, *req.Source, dst, first, last, lim, false); err != nil {
		return classify("source", fmt.Errorf("frames %d-%d: %w", first, last, err))
	}
	src := codec.FileInput(dst)
	req.Source = &src
	if req.AlphaMode == string(job.AlphaCustom) && req.Alpha != nil {
		dst := filepath.Join(dir, "alpha-frames.mp4")
		if err := codec.TrimVideo(ctx, *req.Alpha, dst, first, last, lim, true); err != nil {
			return classify("alpha", fmt.Errorf("frames %d-%d: %w", first, last, err))
		}
		a := codec.FileInput(dst)
		req.Alpha = &a
	}
	if req.AlphaMode == string(job.AlphaSelect) {
		req.AlphaKeyframeIndex -= first
	}
	return nil
}
