package localfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/frame"
)

// fitMaxPixels bounds what --fit will read: a 100 MP photo is fine to
// downscale, anything larger is not a photo.
const fitMaxPixels = 100_000_000

// FitSize returns the largest size within maxPixels with the aspect ratio
// of w x h (each side at least 2 and even, as H.264 wants).
func FitSize(w, h, maxPixels int) (int, int) {
	if w*h <= maxPixels {
		return w, h
	}
	s := math.Sqrt(float64(maxPixels) / float64(w*h))
	fw := max(2, int(math.Floor(float64(w)*s))&^1)
	fh := max(2, int(math.Round(float64(fw)*float64(h)/float64(w)))&^1)
	for fw*fh > maxPixels {
		fw -= 2
		fh = max(2, int(math.Round(float64(fw)*float64(h)/float64(w)))&^1)
	}
	return fw, fh
}

// tooLargeRe reads the size and limit out of a SOURCE_TOO_LARGE message
// (codec.LimitError's words).
var tooLargeRe = regexp.MustCompile(`(\d+)x(\d+) = \d+ pixels, limit (\d+)`)

// FitHint is the fix of a SOURCE_TOO_LARGE message about pixels: the flag
// and the size it would give; "" when msg is not one.
func FitHint(msg string) string {
	m := tooLargeRe.FindStringSubmatch(msg)
	if m == nil {
		return ""
	}
	w, _ := strconv.Atoi(m[1])
	h, _ := strconv.Atoi(m[2])
	lim, _ := strconv.Atoi(m[3])
	fw, fh := FitSize(w, h, lim)
	return fmt.Sprintf("add --fit to downscale it to %dx%d, the largest size within the limit", fw, fh)
}

// fitted is one file that --fit wrote.
type fitted struct {
	path                   string
	fromW, fromH, toW, toH int
}

// fitFile returns path unchanged when its pixels are within the service
// limit; otherwise it writes a copy downscaled to the largest size within
// it (same aspect ratio) into dir and returns that, with the sizes. A
// still becomes a PNG, a video an H.264 MP4 at a high quality (its audio
// copied). matte says the file is an alpha matte: it is kept grey.
func fitFile(ctx context.Context, what, path, dir string, matte bool) (string, *fitted, error) {
	lim := codec.DefaultLimits()
	loose := lim
	loose.MaxPixels = fitMaxPixels
	in := codec.FileInput(path)
	info, err := codec.Probe(ctx, in, loose)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", what, err)
	}
	w, h := info.DisplayWidth, info.DisplayHeight
	if info.Width*info.Height <= lim.MaxPixels {
		return path, nil, nil
	}
	fw, fh := FitSize(w, h, lim.MaxPixels)
	video := info.Kind == codec.KindVideo
	format := frame.RGB24
	switch {
	case matte:
		format = frame.Gray8
	case video:
		format = frame.YUV420P
	}
	dec, err := codec.NewDecoder(ctx, in, loose, codec.DecodeOptions{Format: format, Width: fw, Height: fh})
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", what, err)
	}
	defer dec.Close()
	ext := ".png"
	opts := codec.EncoderOptions{Container: "png", Width: fw, Height: fh, Input: format, Gray: matte}
	if video {
		ext = ".mp4"
		opts.Container = "mp4"
		opts.FrameRate, opts.TimeBase = info.FrameRate, info.TimeBase
		opts.ColorSpace, opts.FullRange = info.ColorSpace, info.FullRange
		opts.Preset, opts.CRF = "fast", 10 // it is encoded once more by the job: keep this near-lossless
		if matte {
			opts.CRF = 4
		} else if info.HasAudio {
			opts.AudioFrom = &in
		}
	}
	out := filepath.Join(dir, fmt.Sprintf("fit-%s%s", what, ext))
	enc, err := codec.NewEncoder(ctx, out, opts)
	if err != nil {
		return "", nil, fmt.Errorf("%s: --fit: %w", what, err)
	}
	f := &frame.HostFrame{}
	for {
		err := dec.Next(ctx, f)
		if errors.Is(err, io.EOF) {
			break
		}
		if err == nil {
			err = enc.Write(ctx, f)
		}
		if err != nil {
			_ = enc.Close()
			_ = os.Remove(out)
			return "", nil, fmt.Errorf("%s: --fit: %w", what, err)
		}
	}
	if err := enc.Close(); err != nil {
		return "", nil, fmt.Errorf("%s: --fit: %w", what, err)
	}
	return out, &fitted{path: out, fromW: w, fromH: h, toW: fw, toH: fh}, nil
}

// Fit applies --fit to the local files named in files (keyed by what
// they are: "source", "alpha"; a reference image has its own, larger
// limit), writing any downscaled copy into dir. It returns the paths to
// use and says on w what it changed.
func Fit(ctx context.Context, files map[string]string, dir string, w io.Writer) (map[string]string, error) {
	out := make(map[string]string, len(files))
	for _, what := range []string{"source", "alpha"} {
		p, ok := files[what]
		if !ok {
			continue
		}
		if err := Check(what, p); err != nil {
			return nil, err
		}
		np, f, err := fitFile(ctx, what, p, dir, what == "alpha")
		if err != nil {
			return nil, err
		}
		out[what] = np
		if f != nil {
			fmt.Fprintf(w, "fit: %s %s is %dx%d, over the %.2f MP limit: downscaled to %dx%d\n",
				what, p, f.fromW, f.fromH, float64(codec.DefaultLimits().MaxPixels)/1e6, f.toW, f.toH)
		}
	}
	return out, nil
}
