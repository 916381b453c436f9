package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CompareOptions configure a side-by-side run of the ffmpeg command line
// and `vfx render` doing the same composite on the same inputs.
type CompareOptions struct {
	VFX    string // path of the vfx binary
	FFmpeg string // path of ffmpeg; "" = looked up in PATH
	Dir    string // working folder (fixture and outputs)
	Width  int
	Height int
	Frames int
	Preset string // x264 preset of both, default "medium"
	CRF    int    // x264 CRF of both, default 18
	// X264Params are libx264 options given to both ("" = x264's own
	// defaults for the preset).
	X264Params string
	Rounds     int // alternating rounds; the best of each is kept; default 1
	// Fixture is "synthetic" (the default: WriteFixture's clean matte) or
	// the name of one of PhotoFixtures.
	Fixture string
	// PhotoDir holds the photo fixtures' photographs ("" =
	// DefaultPhotoDir).
	PhotoDir string
}

// FixtureNames are the fixtures CompareFFmpeg knows, in the order `vfx
// bench ffmpeg` runs them.
func FixtureNames() []string {
	n := []string{"synthetic"}
	for _, f := range PhotoFixtures {
		n = append(n, f.Name)
	}
	return n
}

// Measure is one process's cost.
type Measure struct {
	Wall   time.Duration
	CPU    time.Duration // user + system
	MaxRSS int64         // bytes
}

// CompareReport is the result of CompareFFmpeg.
type CompareReport struct {
	// LoadBefore and LoadAfter are the machine's 1-minute load averages
	// (/proc/loadavg; -1 when unknown) when the runs began and ended: the
	// wall times mean little on a loaded machine.
	LoadBefore, LoadAfter float64
	Fixture               string
	Frames                int
	Width, Height         int
	Preset                string
	CRF                   int
	X264Params            string
	FFmpeg, VFX           Measure
	Ratio                 float64 // VFX.Wall / FFmpeg.Wall
	FFmpegCmd             []string
	VFXCmd                []string
}

// String is a human summary, one measurement per line.
func (r CompareReport) String() string {
	return fmt.Sprintf("fixture %s: composite %d frames %dx%d, x264 preset %s crf %d x264-params %s\n"+
		"ffmpeg (alphamerge+overlay+libx264, 1 output):  %6.2f s wall  %6.2f s cpu  %5d MiB peak RSS\n"+
		"vfx render (relight+composite, 3 outputs):      %6.2f s wall  %6.2f s cpu  %5d MiB peak RSS\n"+
		"ratio vfx/ffmpeg (wall): %.2fx  (cpu: %.2fx; load average %.2f before, %.2f after)",
		r.Fixture, r.Frames, r.Width, r.Height, r.Preset, r.CRF, r.X264Params,
		r.FFmpeg.Wall.Seconds(), r.FFmpeg.CPU.Seconds(), r.FFmpeg.MaxRSS>>20,
		r.VFX.Wall.Seconds(), r.VFX.CPU.Seconds(), r.VFX.MaxRSS>>20, r.Ratio,
		r.VFX.CPU.Seconds()/r.FFmpeg.CPU.Seconds(), r.LoadBefore, r.LoadAfter)
}

// CompareFFmpeg writes the fixture (unless already there), then times the
// ffmpeg command line (alphamerge + overlay on the reference image +
// libx264) and `vfx render --alpha-mode custom --reference` on the same
// source, matte and reference, at the same preset and CRF, one after the
// other in this process, alternating for Rounds rounds and keeping the
// best wall time of each.
func CompareFFmpeg(ctx context.Context, o CompareOptions) (CompareReport, error) {
	if o.Preset == "" {
		o.Preset = "medium"
	}
	if o.CRF == 0 {
		o.CRF = 18
	}
	if o.Rounds <= 0 {
		o.Rounds = 1
	}

	ff := o.FFmpeg
	if ff == "" {
		p, err := exec.LookPath("ffmpeg")
		if err != nil {
			return CompareReport{}, fmt.Errorf("bench: ffmpeg command line not found (apt-get install ffmpeg): %w", err)
		}
		ff = p
	}
	if o.Fixture == "" {
		o.Fixture = "synthetic"
	}
	paths, dir, err := compareFixture(ctx, o, ff)
	if err != nil {
		return CompareReport{}, err
	}
	resetPeakRSS()
	rep := CompareReport{LoadBefore: loadAverage(), Fixture: o.Fixture, Frames: o.Frames, Width: o.Width, Height: o.Height, Preset: o.Preset, CRF: o.CRF, X264Params: o.X264Params}
	rep.FFmpegCmd = []string{ff, "-hide_banner", "-loglevel", "error", "-y",
		"-i", paths.Source, "-i", paths.Matte, "-loop", "1", "-i", paths.Reference,
		"-filter_complex", "[1:v]format=gray[m];[0:v][m]alphamerge[fg];[2:v][fg]overlay=shortest=1:format=auto,format=yuv420p[out]",
		"-map", "[out]", "-c:v", "libx264", "-preset", o.Preset, "-crf", strconv.Itoa(o.CRF)}
	if o.X264Params != "" {
		rep.FFmpegCmd = append(rep.FFmpegCmd, "-x264-params", o.X264Params)
	}
	rep.FFmpegCmd = append(rep.FFmpegCmd, filepath.Join(dir, "ffmpeg_render.mp4"))
	rep.VFXCmd = []string{o.VFX, "render", "--quiet", "--type", "video", "--source", paths.Source,
		"--alpha-mode", "custom", "--alpha", paths.Matte, "--reference", paths.Reference,
		"--prompt", "warm key light from the left", "--seed", "1",
		"--max-resolution", "1080", "--preset", o.Preset, "--crf", strconv.Itoa(o.CRF), "--x264-params", o.X264Params,
		"--out", filepath.Join(dir, "vfx")}
	for i := 0; i < o.Rounds; i++ {
		m, err := measure(ctx, rep.FFmpegCmd)
		if err != nil {
			return rep, fmt.Errorf("bench: ffmpeg: %w", err)
		}
		rep.FFmpeg = best(rep.FFmpeg, m)
		if m, err = measure(ctx, rep.VFXCmd); err != nil {
			return rep, fmt.Errorf("bench: vfx render: %w", err)
		}
		rep.VFX = best(rep.VFX, m)
	}
	rep.Ratio = rep.VFX.Wall.Seconds() / rep.FFmpeg.Wall.Seconds()
	rep.LoadAfter = loadAverage()
	return rep, nil
}

// compareFixture writes o's fixture unless a stamp says it is there, and
// returns its files and the folder of the outputs: o.Dir for the
// synthetic fixture (its files in o.Dir/input, as before), o.Dir/NAME
// for a photo fixture.
func compareFixture(ctx context.Context, o CompareOptions, ff string) (FixturePaths, string, error) {
	dir, in := o.Dir, filepath.Join(o.Dir, "input")
	var photo *PhotoFixture
	if o.Fixture != "synthetic" {
		for i := range PhotoFixtures {
			if PhotoFixtures[i].Name == o.Fixture {
				photo = &PhotoFixtures[i]
			}
		}
		if photo == nil {
			return FixturePaths{}, "", fmt.Errorf("bench: no fixture %q (want one of %s)", o.Fixture, strings.Join(FixtureNames(), ", "))
		}
		dir = filepath.Join(o.Dir, o.Fixture)
		in = filepath.Join(dir, "input")
	}
	paths := PhotoFixturePaths(in) // the same names for both
	stamp := filepath.Join(in, fmt.Sprintf(".fixture-%dx%dx%d", o.Width, o.Height, o.Frames))
	if _, err := os.Stat(stamp); err == nil {
		return paths, dir, nil
	}
	var err error
	if photo == nil {
		paths, err = WriteFixture(ctx, in, FixtureOptions{Width: o.Width, Height: o.Height, Frames: o.Frames})
	} else {
		paths, err = WritePhotoFixture(ctx, in, *photo, PhotoFixtureOptions{Width: o.Width, Height: o.Height,
			Frames: o.Frames, PhotoDir: o.PhotoDir, FFmpeg: ff})
	}
	if err != nil {
		return paths, dir, err
	}
	if err := os.WriteFile(stamp, nil, 0o644); err != nil {
		return paths, dir, fmt.Errorf("bench: %w", err)
	}
	return paths, dir, nil
}

// resetPeakRSS returns this process's memory to the system and resets its
// peak RSS to its RSS now (best effort, Linux only). A child started with
// vfork and exec reports at least its parent's peak RSS as its own (the
// kernel carries the parent's high-water mark into the exec), so a
// fixture just drawn in this process would otherwise show as the peak
// RSS of both commands measured.
func resetPeakRSS() {
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// loadAverage is the 1-minute load average, or -1 when unknown.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}

func best(a, b Measure) Measure {
	if a.Wall == 0 || b.Wall < a.Wall {
		return b
	}
	return a
}

// measure runs a command to completion and reports its wall time, CPU time
// and peak resident set size.
func measure(ctx context.Context, argv []string) (Measure, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return Measure{}, fmt.Errorf("%w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	m := Measure{Wall: wall, CPU: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m.MaxRSS = ru.Maxrss * 1024 // Linux reports KiB
	}
	return m, nil
}
