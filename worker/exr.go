package worker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/render"
)

// Output formats of RenderRequest.OutputFormat.
const (
	// OutputMP4 is the default: render, source and alpha as MP4 (PNG for
	// an image).
	OutputMP4 = "mp4"
	// OutputEXR adds the EXR pass sequences (EXRPasses) beside them.
	OutputEXR = "exr"
	// DefaultStartFrame is the first frame number of an EXR sequence
	// (the studio habit).
	DefaultStartFrame = 1001
)

// EXR colour spaces of RenderRequest.EXRColorSpace.
const (
	EXRRec709 = "rec709" // linear Rec.709 primaries, D65 (the default)
	EXRACEScg = "acescg" // linear ACES AP1 primaries
)

// EXRPasses are the EXR sequences an `exr` job writes, each in its own
// folder: <out>/<pass>/<pass>.<frame>.exr (see render.Passes).
var EXRPasses = job.EXRPasses

// exrColour lists the passes that hold colours (converted to the EXR
// colour space); the others are ratios, a matte or normals.
var exrColour = map[string]bool{"composite": true, "foreground": true, "wrap": true, "backdrop": true}

// rec709ToACEScg converts linear Rec.709 (D65) to ACEScg (AP1, D60,
// Bradford adaptation).
var rec709ToACEScg = [3][3]float32{
	{0.6130974, 0.3395231, 0.0473795},
	{0.0701937, 0.9163539, 0.0134524},
	{0.0206156, 0.1095698, 0.8698151},
}

// exrFrame is one frame's passes read back to the host.
type exrFrame struct {
	number int
	images map[string]codec.EXRImage
}

// readPasses copies the frame's passes to the host as EXR images in the
// job's colour space. The foreground gets the alpha as a fourth channel.
func readPasses(dev kernels.Device, p *render.Passes, w, h int, space string) (map[string]codec.EXRImage, error) {
	chroma := codec.Rec709Chromaticities
	if space == EXRACEScg {
		chroma = codec.ACEScgChromaticities
	}
	imgs := map[string]kernels.Image{"composite": p.Composite, "foreground": p.Foreground, "alpha": p.Alpha,
		"gain": p.Gain, "shadow": p.Shadow, "wrap": p.Wrap, "backdrop": p.Backdrop, "normals": p.Normals, "grain": p.Grain}
	out := make(map[string]codec.EXRImage, len(imgs))
	n := w * h
	var alpha []float32
	for _, name := range EXRPasses {
		px, err := dev.ReadPixels(imgs[name])
		if err != nil {
			return nil, fmt.Errorf("worker: read pass %s: %w", name, err)
		}
		chans := make([][]float32, len(px)/n)
		for c := range chans {
			chans[c] = px[c*n : (c+1)*n]
		}
		if space == EXRACEScg && exrColour[name] && len(chans) == 3 {
			m := rec709ToACEScg
			r, g, b := chans[0], chans[1], chans[2]
			for k := range n {
				r[k], g[k], b[k] = m[0][0]*r[k]+m[0][1]*g[k]+m[0][2]*b[k],
					m[1][0]*r[k]+m[1][1]*g[k]+m[1][2]*b[k],
					m[2][0]*r[k]+m[2][1]*g[k]+m[2][2]*b[k]
			}
		}
		if name == "alpha" {
			alpha = chans[0]
		}
		out[name] = codec.EXRImage{Width: w, Height: h, Channels: chans, Chromaticities: chroma}
	}
	fg := out["foreground"]
	fg.Channels = append(fg.Channels, alpha)
	out["foreground"] = fg
	return out, nil
}

// exrPath is the file of one pass's frame under dir.
func exrPath(dir, pass string, number int) string {
	return filepath.Join(dir, pass, fmt.Sprintf("%s.%04d.exr", pass, number))
}

// makeEXRDirs makes the pass folders under dir.
func makeEXRDirs(dir string) error {
	for _, p := range EXRPasses {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			return fmt.Errorf("worker: exr folder: %w", err)
		}
	}
	return nil
}

// exrStage writes every frame's passes (nothing when in is closed at
// once).
func exrStage(ctx context.Context, dir string, in <-chan exrFrame) error {
	for f := range in {
		for _, p := range EXRPasses {
			if err := codec.WriteEXR(ctx, exrPath(dir, p, f.number), f.images[p]); err != nil {
				return fmt.Errorf("worker: exr %s frame %d: %w", p, f.number, err)
			}
		}
	}
	return nil
}
