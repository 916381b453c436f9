package worker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/media"
)

// ArchiveFPS is the frame rate of a frame archive source given to the API
// (it has no field for it; `vfx render --fps` sets it locally).
const ArchiveFPS = 24

// ArchiveSource turns a frame archive source (a ZIP or TAR of PNG or EXR
// frames, media.InspectArchive) into the lossless video every job takes,
// as an image-sequence source is (codec.WriteSequenceVideo): the archive
// is judged from its index against lim before anything is extracted, its
// frames are then extracted under names of their own into a folder of dir,
// encoded to dir/source-archive.mp4 at fps, and removed. ok is false, and
// nothing is done, when in is not an archive.
func ArchiveSource(ctx context.Context, in codec.Input, dir string, lim codec.Limits, fps codec.Rational) (out codec.Input, ok bool, err error) {
	format, err := media.SniffArchive(in)
	if err != nil || format == "" {
		return in, false, err
	}
	a, err := media.InspectArchive(ctx, in, lim)
	if err != nil {
		return in, true, err
	}
	frames, err := os.MkdirTemp(dir, "archive-frames-")
	if err != nil {
		return in, true, fmt.Errorf("worker: archive: %w", err)
	}
	defer os.RemoveAll(frames)
	files, err := media.ExtractArchive(ctx, in, a, frames)
	if err != nil {
		return in, true, err
	}
	dst := filepath.Join(dir, "source-archive.mp4")
	if err := codec.WriteSequenceVideo(ctx, files, dst, lim, codec.SequenceOptions{FrameRate: fps}); err != nil {
		return in, true, classify("source", fmt.Errorf("archive: %w", err))
	}
	return codec.FileInput(dst), true, nil
}
