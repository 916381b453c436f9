package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"image"
	"image/draw"
	_ "image/jpeg" // the photographs
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// DefaultPhotoDir is where Debian's mate-backgrounds package installs its
// photographs (`apt-get install mate-backgrounds`): the photo fixtures'
// plates, subjects and references.
const DefaultPhotoDir = "/usr/share/backgrounds/mate/nature"

// ErrNoPhotos is returned (wrapped) by WritePhotoFixture when the
// photographs it needs are not installed.
var ErrNoPhotos = errors.New("bench: the photo fixtures need the photographs of Debian's mate-backgrounds package (apt-get install mate-backgrounds)")

// photoReference is the photo fixtures' new background (1920x1280), in
// DefaultPhotoDir.
const photoReference = "Storm.jpg"

// PhotoFixture is one fixture that looks like real work: a subject
// textured from a photograph over a plate panned and zoomed over another,
// with a soft, noisy matte, both encoded by the ffmpeg command line with
// libx264 as a user's tool would, and a photograph as the reference.
type PhotoFixture struct {
	Name string
	// Share is the subject's target share of the frame's area (its
	// matte's mean, before the noise).
	Share float64
	// Plate and Subject are the photographs (in DefaultPhotoDir) of the
	// moving background and of the subject's texture.
	Plate, Subject string
}

// PhotoFixtures are the photo fixtures, by subject size: from small to a
// third of the frame.
var PhotoFixtures = []PhotoFixture{
	{Name: "photo-small", Share: 0.04, Plate: "Dune.jpg", Subject: "YellowFlower.jpg"},
	{Name: "photo-medium", Share: 0.15, Plate: "LadyBird.jpg", Subject: "FreshFlower.jpg"},
	{Name: "photo-large", Share: 0.33, Plate: "GreenMeadow.jpg", Subject: "Blinds.jpg"},
}

// PhotoFixtureOptions size a photo fixture.
type PhotoFixtureOptions struct {
	Width, Height, Frames int    // even sizes
	FPS                   int    // default 25
	PhotoDir              string // default DefaultPhotoDir
	Seed                  uint64
	// FFmpeg is the ffmpeg command line that encodes the videos; ""
	// = looked up in PATH.
	FFmpeg string
}

// photo is a decoded photograph as float sRGB codes (0..255), planar.
type photo struct {
	w, h int
	c    [3][]float32
}

func loadPhoto(path string) (*photo, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s missing", ErrNoPhotos, path)
		}
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer f.Close()
	im, _, err := image.Decode(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("bench: decode %s: %w", path, err)
	}
	b := im.Bounds()
	rgba := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(rgba, rgba.Bounds(), im, b.Min, draw.Src)
	p := &photo{w: b.Dx(), h: b.Dy()}
	for c := range p.c {
		p.c[c] = make([]float32, p.w*p.h)
	}
	for i := range p.w * p.h {
		for c := range 3 {
			p.c[c][i] = float32(rgba.Pix[4*i+c])
		}
	}
	return p, nil
}

// sample is the photograph's bilinear sample at (u, v) in pixels,
// clamped to its edges.
func (p *photo) sample(u, v float64) (r, g, b float32) {
	u = math.Min(math.Max(u-0.5, 0), float64(p.w-1))
	v = math.Min(math.Max(v-0.5, 0), float64(p.h-1))
	x0, y0 := int(u), int(v)
	x1, y1 := min(x0+1, p.w-1), min(y0+1, p.h-1)
	fx, fy := float32(u-float64(x0)), float32(v-float64(y0))
	i00, i01, i10, i11 := y0*p.w+x0, y0*p.w+x1, y1*p.w+x0, y1*p.w+x1
	var o [3]float32
	for c := range 3 {
		q := p.c[c]
		a := q[i00] + fx*(q[i01]-q[i00])
		bb := q[i10] + fx*(q[i11]-q[i10])
		o[c] = a + fy*(bb-a)
	}
	return o[0], o[1], o[2]
}

// noiseField is smooth value noise: random values on a coarse grid,
// bilinearly interpolated, drifting over time like a network matte's
// uncertainty.
type noiseField struct {
	gw, gh, cell int
	a, b         []float32 // two grids; a frame blends them
}

func newNoiseField(w, h, cell int, r *rand.Rand) *noiseField {
	n := &noiseField{gw: w/cell + 2, gh: h/cell + 2, cell: cell}
	n.a, n.b = make([]float32, n.gw*n.gh), make([]float32, n.gw*n.gh)
	for i := range n.a {
		n.a[i], n.b[i] = float32(r.Float64()*2-1), float32(r.Float64()*2-1)
	}
	return n
}

// row writes the field at row y, blend t (0..1) into dst.
func (n *noiseField) row(dst []float32, y int, t float32) {
	gy := float32(y) / float32(n.cell)
	j := int(gy)
	fy := gy - float32(j)
	for x := range dst {
		gx := float32(x) / float32(n.cell)
		i := int(gx)
		fx := gx - float32(i)
		at := func(g []float32) float32 {
			k := j*n.gw + i
			a := g[k] + fx*(g[k+1]-g[k])
			b := g[k+n.gw] + fx*(g[k+n.gw+1]-g[k+n.gw])
			return a + fy*(b-a)
		}
		dst[x] = at(n.a) + t*(at(n.b)-at(n.a))
	}
}

// PhotoFixturePaths returns the files of a photo fixture in dir.
func PhotoFixturePaths(dir string) FixturePaths {
	return FixturePaths{Source: filepath.Join(dir, "source.mp4"), Matte: filepath.Join(dir, "matte.mp4"),
		Reference: filepath.Join(dir, "reference.png")}
}

// WritePhotoFixture writes fx into dir: source.mp4 (the subject over the
// moving plate; libx264 preset fast, CRF 18, BT.709 limited range),
// matte.mp4 (a grey yuv420p video, libx264 preset medium, CRF 20, limited
// range: soft edges 2 to 10 pixels wide, a wavy outline, and smooth noise
// of a few codes everywhere, so that nearly no block is exactly 0 or 255)
// and reference.png (a photograph cropped to the frame). It returns
// ErrNoPhotos (wrapped) when the photographs are missing.
func WritePhotoFixture(ctx context.Context, dir string, fx PhotoFixture, o PhotoFixtureOptions) (FixturePaths, error) {
	if o.FPS == 0 {
		o.FPS = 25
	}
	if o.PhotoDir == "" {
		o.PhotoDir = DefaultPhotoDir
	}
	p := PhotoFixturePaths(dir)
	if o.Width <= 0 || o.Height <= 0 || o.Frames <= 0 || o.Width%2 != 0 || o.Height%2 != 0 {
		return p, fmt.Errorf("bench: fixture size %dx%d x %d frames: want positive, even sizes", o.Width, o.Height, o.Frames)
	}
	if fx.Share <= 0 || fx.Share > 0.5 {
		return p, fmt.Errorf("bench: fixture %s: subject share %.2f out of (0, 0.5]", fx.Name, fx.Share)
	}
	ff := o.FFmpeg
	if ff == "" {
		var err error
		if ff, err = exec.LookPath("ffmpeg"); err != nil {
			return p, fmt.Errorf("bench: ffmpeg command line not found (apt-get install ffmpeg): %w", err)
		}
	}
	plate, err := loadPhoto(filepath.Join(o.PhotoDir, fx.Plate))
	if err != nil {
		return p, err
	}
	skin, err := loadPhoto(filepath.Join(o.PhotoDir, fx.Subject))
	if err != nil {
		return p, err
	}
	refPath := filepath.Join(o.PhotoDir, photoReference)
	if _, err := os.Stat(refPath); err != nil {
		return p, fmt.Errorf("%w: %s missing", ErrNoPhotos, refPath)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return p, fmt.Errorf("bench: %w", err)
	}
	w, h := o.Width, o.Height
	size := strconv.Itoa(w) + "x" + strconv.Itoa(h)
	// The reference: the photograph scaled to cover the frame, centred.
	if out, err := exec.CommandContext(ctx, ff, "-hide_banner", "-loglevel", "error", "-y", "-i", refPath,
		"-vf", fmt.Sprintf("scale=%d:%d:force_original_aspect_ratio=increase,crop=%d:%d", w, h, w, h),
		"-frames:v", "1", p.Reference).CombinedOutput(); err != nil {
		return p, fmt.Errorf("bench: reference: %w: %s", err, out)
	}
	rate := strconv.Itoa(o.FPS)
	srcCmd := exec.CommandContext(ctx, ff, "-hide_banner", "-loglevel", "error", "-y",
		"-f", "rawvideo", "-pix_fmt", "rgb24", "-s", size, "-r", rate, "-i", "-",
		"-vf", "scale=out_color_matrix=bt709:out_range=tv,format=yuv420p",
		"-c:v", "libx264", "-preset", "fast", "-crf", "18",
		"-colorspace", "bt709", "-color_primaries", "bt709", "-color_trc", "bt709", "-color_range", "tv", p.Source)
	matCmd := exec.CommandContext(ctx, ff, "-hide_banner", "-loglevel", "error", "-y",
		"-f", "rawvideo", "-pix_fmt", "gray", "-s", size, "-r", rate, "-i", "-",
		"-vf", "format=yuv420p", "-c:v", "libx264", "-preset", "medium", "-crf", "20", p.Matte)
	srcIn, err := startPipe(srcCmd)
	if err != nil {
		return p, err
	}
	matIn, err := startPipe(matCmd)
	if err != nil {
		srcIn.Close()
		_ = srcCmd.Wait()
		return p, err
	}
	werr := drawPhotoFrames(ctx, fx, o, plate, skin, srcIn, matIn)
	srcIn.Close()
	matIn.Close()
	e1, e2 := srcCmd.Wait(), matCmd.Wait()
	if werr != nil {
		return p, werr
	}
	if e1 != nil {
		return p, fmt.Errorf("bench: encode source: %w: %s", e1, srcCmd.Stderr)
	}
	if e2 != nil {
		return p, fmt.Errorf("bench: encode matte: %w: %s", e2, matCmd.Stderr)
	}
	return p, nil
}

type stderrBuf struct{ b []byte }

func (s *stderrBuf) Write(p []byte) (int, error) {
	if len(s.b) < 4096 {
		s.b = append(s.b, p...)
	}
	return len(p), nil
}
func (s *stderrBuf) String() string { return string(s.b) }

func startPipe(cmd *exec.Cmd) (io.WriteCloser, error) {
	cmd.Stderr = &stderrBuf{}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: start %s: %w", cmd.Path, err)
	}
	return in, nil
}

// drawPhotoFrames draws the frames of fx and writes them, RGB24 to src
// and Gray8 to mat.
func drawPhotoFrames(ctx context.Context, fx PhotoFixture, o PhotoFixtureOptions, plate, skin *photo, src, mat io.Writer) error {
	w, h := o.Width, o.Height
	r := rand.New(rand.NewPCG(o.Seed+7, uint64(len(fx.Name))^0x2545f4914f6cdd1d))
	noise := newNoiseField(w, h, 48, r)
	var ph [4]float64
	for i := range ph {
		ph[i] = r.Float64() * 2 * math.Pi
	}
	// The subject: an upright blob (radii R and 1.3 R) with a wavy
	// outline, whose area is fx.Share of the frame.
	R := math.Sqrt(fx.Share * float64(w*h) / (math.Pi * 1.3))
	rgb := make([]byte, 3*w*h)
	gray := make([]byte, w*h)
	nrow := make([]float32, w)
	for i := range o.Frames {
		if err := ctx.Err(); err != nil {
			return err
		}
		t := 0.0
		if o.Frames > 1 {
			t = float64(i) / float64(o.Frames-1)
		}
		// The plate: a window 70% to 58% of the photograph's width,
		// panning from left to right and down a little.
		zw := float64(plate.w) * (0.70 - 0.12*t)
		scale := zw / float64(w)
		zh := float64(h) * scale
		px := (float64(plate.w) - zw) * (0.1 + 0.8*t)
		py := (float64(plate.h) - zh) * (0.3 + 0.4*t)
		// The subject's centre moves across the frame and bobs.
		cx := float64(w) * (0.32 + 0.36*t)
		cy := float64(h)*0.55 + 0.03*float64(h)*math.Sin(4*math.Pi*t+ph[0])
		// Its texture: the photograph moving with it, slowly turning.
		ss := float64(skin.w) / (6 * R)
		rot := 0.3 * math.Sin(2*math.Pi*t+ph[1])
		cr, sr := math.Cos(rot), math.Sin(rot)
		nt := float32(0.5 + 0.5*math.Sin(2*math.Pi*t*3))
		for y := range h {
			noise.row(nrow, y, nt)
			fy := float64(y) + 0.5
			dy := (fy - cy) / 1.3
			for x := range w {
				fx2 := float64(x) + 0.5
				br, bgc, bb := plate.sample(px+fx2*scale, py+fy*scale)
				a := 0.0
				dx := fx2 - cx
				rr := math.Hypot(dx, dy)
				if rr < 1.25*R+12 {
					th := math.Atan2(dy, dx)
					edge := R * (1 + 0.06*math.Sin(5*th+ph[2]+3*t) + 0.04*math.Sin(11*th-5*t+ph[3]))
					// Feather 2..10 px around the outline (wider where
					// hair would be: the top).
					feather := 6 + 4*math.Sin(th+ph[1])
					a = math.Min(1, math.Max(0, 0.5-(rr-edge)/feather))
				}
				o3 := 3 * (y*w + x)
				if a > 0 {
					// The subject's texture and shading.
					u, v := (dx*cr-dy*1.3*sr)*ss, (dx*sr+dy*1.3*cr)*ss
					sR, sG, sB := skin.sample(float64(skin.w)/2+u, float64(skin.h)/2+v)
					shade := float32(0.75 + 0.25*math.Max(-1, math.Min(1, -(dx+dy)/(1.5*R))))
					af := float32(a)
					br = af*sR*shade + (1-af)*br
					bgc = af*sG*shade + (1-af)*bgc
					bb = af*sB*shade + (1-af)*bb
				}
				rgb[o3], rgb[o3+1], rgb[o3+2] = clampByte(br), clampByte(bgc), clampByte(bb)
				// The matte: the coverage, lifted off 0 and 255 by a few
				// codes of smooth noise (a network's or a roto tool's
				// uncertainty), which the encoder keeps.
				m := float32(a)*(255-8) + 4 + 3*nrow[x]
				gray[y*w+x] = clampByte(m)
			}
		}
		if _, err := src.Write(rgb); err != nil {
			return fmt.Errorf("bench: encode source: %w", err)
		}
		if _, err := mat.Write(gray); err != nil {
			return fmt.Errorf("bench: encode matte: %w", err)
		}
	}
	return nil
}

func clampByte(v float32) byte {
	if v <= 0 {
		return 0
	}
	if v >= 255 {
		return 255
	}
	return byte(v + 0.5)
}
