package look

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/vfxrender/vfx/bench"
	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/internal/srgb"
	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/render"
	"github.com/vfxrender/vfx/render/camfit"
)

// The camera-lock check (issue 31): on each clip, the first frames are
// rendered as one video job over the reference plate; the background's
// motion frame to frame is measured on the source (outside the mask) and
// on the render (outside the mask, further from the subject so that its
// shadow and light wrap do not count) with camfit.Shift, and the
// per-frame error is the distance between the two motions. A clip whose
// source background moves at least camPanning pixels a frame (median) is
// panning, one under camLocked locked-off.

// CameraClips are the clips of the camera check: DAVIS clips
// (every one of the 30 train clips pans or drifts: the stillest, car-turn,
// moves 0.26 px a frame), and CameraFixture, the synthetic fixture's
// still camera, for a locked-off shot.
var CameraClips = []string{"lucia", "hike", "bear", "tennis", "flamingo", "car-turn", "dance-jump", CameraFixture}

// CameraFixture names the synthetic locked-off clip (bench fixture's
// scene at 854x480).
const CameraFixture = "fixture"

const (
	// camPanning and camLocked (source pixels a frame, median) classify
	// a clip; camErrPanning and camErrLocked are the limits.
	camPanning, camLocked       = 1.0, 0.2
	camErrPanning, camErrLocked = 1.0, 0.2
	// camSrcDilate and camOutDilate (pixels) keep the measures away from
	// the subject on the source and on the render.
	camSrcDilate, camOutDilate = 4, 16
)

// CameraRow is one clip's camera check.
type CameraRow struct {
	Clip string
	// Source and Plate are the median motion a frame (pixels) of the
	// source's background and of the render's; Err the median distance
	// between the two motions per frame; Frames the frames measured.
	Source, Plate, Err float64
	Frames             int
	thumbs             []*thumb // source and render at the first, middle and last frames
}

// Kind is "panning", "locked-off" or "" (neither).
func (r CameraRow) Kind() string {
	switch {
	case r.Source >= camPanning:
		return "panning"
	case r.Source < camLocked:
		return "locked-off"
	}
	return ""
}

// Met says whether the clip meets its kind's limit (true for neither).
func (r CameraRow) Met() bool {
	switch r.Kind() {
	case "panning":
		return r.Err < camErrPanning
	case "locked-off":
		return r.Err < camErrLocked
	}
	return true
}

// lookCamera runs the camera check on n frames of a clip (load gives
// frame i with its matte) and keeps thumbnails of the source and the
// render at its first, middle and last frames.
func lookCamera(ctx context.Context, dev kernels.Device, name string, n int, load func(i int) (*lookSubject, error), ref *frame.HostFrame, seed uint32, noLock bool) (CameraRow, error) {
	row := CameraRow{Clip: name}
	var r *render.Renderer
	defer func() {
		if r != nil {
			r.Close()
		}
	}()
	var src, plate, errs []float64
	var prevS, prevO, prevA []float32
	for i := 0; i < n; i++ {
		s, err := load(i)
		if err != nil {
			return row, err
		}
		if s == nil {
			break // the clip is shorter
		}
		if r == nil {
			if r, err = render.New(ctx, dev, render.Params{Reference: ref, Seed: seed, Width: s.w, Height: s.h, NoCameraLock: noLock}); err != nil {
				return row, err
			}
		}
		out, err := renderOne(ctx, dev, r, s, s.alpha)
		if err != nil {
			return row, err
		}
		if i == 0 || i == n/2 || i == n-1 {
			row.thumbs = append(row.thumbs, makeThumb(s.src, s.w, s.h), makeThumb(out, s.w, s.h))
		}
		np := s.w * s.h
		ys, yo := luma32(s.src, np), luma32(out, np)
		if prevS != nil {
			sx, sy, ok1 := camfit.Shift(prevS, prevA, ys, s.alpha, s.w, s.h, camSrcDilate)
			ox, oy, ok2 := camfit.Shift(prevO, prevA, yo, s.alpha, s.w, s.h, camOutDilate)
			if ok1 && ok2 {
				src = append(src, math.Hypot(sx, sy))
				plate = append(plate, math.Hypot(ox, oy))
				errs = append(errs, math.Hypot(ox-sx, oy-sy))
			}
		}
		prevS, prevO, prevA = ys, yo, s.alpha
	}
	row.Source, row.Plate, row.Err, row.Frames = median(src), median(plate), median(errs), len(errs)
	return row, nil
}

// davisLoader loads frame i of a DAVIS clip (frames decoded) with its
// mask made soft; nil past the last frame.
func davisLoader(ctx context.Context, dev kernels.Device, dir string, frames []*frame.HostFrame) func(i int) (*lookSubject, error) {
	return func(i int) (*lookSubject, error) {
		if i >= len(frames) {
			return nil, nil
		}
		return loadSubject(ctx, dev, dir, frames[i], filepath.Join(dir, "masks", fmt.Sprintf("%05d.png", i)))
	}
}

// fixtureLoader loads frame i of the synthetic fixture (a still camera:
// a textured subject moving over a static textured background, with its
// exact matte) at w x h.
func fixtureLoader(w, h, n int) func(i int) (*lookSubject, error) {
	sc := bench.NewScene(w, h, n, 7)
	return func(i int) (*lookSubject, error) {
		f, err := frame.New(frame.RGB24, w, h)
		if err != nil {
			return nil, err
		}
		m, err := frame.New(frame.Gray8, w, h)
		if err != nil {
			return nil, err
		}
		sc.FillRGB(i, f, m)
		s := &lookSubject{name: CameraFixture, w: w, h: h, host: f, src: make([]float32, 3*w*h), alpha: make([]float32, w*h)}
		np := w * h
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				p := f.Planes[0][y*f.Strides[0]+3*x:]
				for c := 0; c < 3; c++ {
					s.src[c*np+y*w+x] = float32(srgb.ToLinear(float64(p[c]) / 255))
				}
				s.alpha[y*w+x] = float32(m.Planes[0][y*m.Strides[0]+x]) / 255
			}
		}
		return s, nil
	}
}

// luma32 is the luminance of planar linear RGB.
func luma32(p []float32, n int) []float32 {
	y := make([]float32, n)
	for i := range y {
		y[i] = 0.2126*p[i] + 0.7152*p[n+i] + 0.0722*p[2*n+i]
	}
	return y
}

// cameraString formats the camera rows.
func (r *Report) cameraString() string {
	if len(r.Camera) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "camera lock (reference plate, %d frames; px a frame, medians over frames)\n", r.CameraFrames)
	fmt.Fprintf(&b, "  %-12s %-10s %8s %8s %8s %s\n", "clip", "kind", "source", "plate", "error", "limit")
	for _, c := range r.Camera {
		lim := ""
		switch c.Kind() {
		case "panning":
			lim = fmt.Sprintf("< %.1f", camErrPanning)
		case "locked-off":
			lim = fmt.Sprintf("< %.1f", camErrLocked)
		}
		met := ""
		if lim != "" {
			met = map[bool]string{true: " met", false: " NOT MET"}[c.Met()]
		}
		fmt.Fprintf(&b, "  %-12s %-10s %8.3f %8.3f %8.3f %s%s\n", c.Clip, c.Kind(), c.Source, c.Plate, c.Err, lim, met)
	}
	return b.String()
}

// runCamera runs the camera check on opt's clips into rep.
func runCamera(ctx context.Context, dev kernels.Device, opt Options, ref *frame.HostFrame, rep *Report) error {
	clips := opt.CameraClips
	if clips == nil {
		clips = CameraClips
	}
	n := opt.CameraFrames
	if n <= 0 {
		n = 16
	}
	rep.CameraFrames = n
	for _, name := range clips {
		load := fixtureLoader(854, 480, n)
		if name != CameraFixture {
			dir := filepath.Join(opt.Dataset, name)
			frames, err := decodeFrames(ctx, filepath.Join(dir, "source.mp4"), n)
			if err != nil {
				return err
			}
			load = davisLoader(ctx, dev, dir, frames)
		}
		row, err := lookCamera(ctx, dev, name, n, load, ref, opt.Seed, opt.NoCameraLock)
		if err != nil {
			return fmt.Errorf("bench: camera %s: %w", name, err)
		}
		rep.Camera = append(rep.Camera, row)
	}
	return nil
}
