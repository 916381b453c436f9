package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vfxrender/vfx/client"
	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/localfile"
)

// submitConfig is the parsed command line of `vfx submit`.
type submitConfig struct {
	conn     connFlags
	request  map[string]any
	files    map[string]string // request field -> local path to upload
	out      string
	noWait   bool
	timeout  time.Duration
	hasIdem  bool
	fit      bool
	fieldSeq []string // upload order: source, alpha, reference
}

// parseSubmitFlags reads the command line of `vfx submit`.
func parseSubmitFlags(args []string, stderr io.Writer, getenv func(string) string) (submitConfig, error) {
	fs := flag.NewFlagSet("submit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := addConnFlags(fs, getenv, true, false)
	typ := fs.String("type", "", "generation_type: image or video (required)")
	source := fs.String("source", "", "source file to upload, or an https://, vfx:// or data: URI (required)")
	alphaMode := fs.String("alpha-mode", "", "alpha_mode: auto, fill, custom or select (required)")
	alpha := fs.String("alpha", "", "alpha matte file or URI (custom, select)")
	ref := fs.String("reference", "", "reference image file or URI")
	prompt := fs.String("prompt", "", "text prompt (at most 2000 characters)")
	seed := fs.Int64("seed", 0, "seed, 0-4294967295 (random when not given)")
	maxRes := fs.Int("max-resolution", 0, "720 or 1080 (server default 1080)")
	keyframe := fs.Int("alpha-keyframe-index", 0, "keyframe of a select matte on a video")
	idem := fs.String("idempotency-key", "", "idempotency key (1-256 characters); a random one is used when not given, so that retries never make a second job")
	callback := fs.String("callback-url", "", "webhook URL called when the job ends")
	out := fs.String("out", "", "download folder (default ./out/<job id>)")
	noWait := fs.Bool("no-wait", false, "print the job id and return without waiting")
	timeout := fs.Duration("timeout", time.Hour, "how long to wait for the job")
	foreground := fs.Bool("foreground", false, "also return output.foreground: the clean relit subject premultiplied with its alpha (RGBA PNG or ProRes 4444 .mov; an extension beyond SPEC.md)")
	outputFormat := fs.String("output-format", "mp4", "mp4 (render, source, alpha), or exr: also the EXR pass sequences, one ZIP each (exr_<pass>.zip: <pass>/<pass>.1001.exr ...; an extension beyond SPEC.md)")
	frames := fs.String("frames", "", "render only source frames A-B of a video (0-based, inclusive, e.g. 10-19; an extension beyond SPEC.md)")
	placement := fs.String("placement", "", "place the subject over the plate: SCALE[,X,Y] (scale 0.25..4 about the centre, then X right and Y down in fractions of the frame, -1..1; an extension beyond SPEC.md)")
	fit := fs.Bool("fit", false, "downscale a local source (and custom matte) over 2.77 MP to the largest size within the limit before upload, keeping the aspect ratio")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return submitConfig{}, err
	}
	if len(pos) > 0 {
		return submitConfig{}, usageError{fmt.Sprintf("unexpected argument %q", pos[0])}
	}
	if err := requireFlags(fs); err != nil {
		return submitConfig{}, err
	}
	if *timeout <= 0 {
		return submitConfig{}, usageError{"--timeout: want a positive duration"}
	}
	if *outputFormat != job.OutputFormatMP4 && *outputFormat != job.OutputFormatEXR {
		return submitConfig{}, usageError{fmt.Sprintf("--output-format %q: want mp4 or exr", *outputFormat)}
	}
	if *frames != "" {
		if _, _, err := parseFrames(*frames); err != nil {
			return submitConfig{}, usageError{err.Error()}
		}
	}
	place, err := parsePlacement(*placement)
	if err != nil {
		return submitConfig{}, err
	}
	set := setFlags(fs)
	cfg := submitConfig{conn: cf, out: *out, noWait: *noWait, timeout: *timeout, fit: *fit,
		request: map[string]any{"generation_type": *typ, "alpha_mode": *alphaMode}, files: map[string]string{}}
	addInput := func(field, v string) {
		if v == "" {
			return
		}
		if isRemoteURI(v) {
			cfg.request[field] = v
			return
		}
		cfg.files[field] = v
		cfg.fieldSeq = append(cfg.fieldSeq, field)
	}
	addInput("source_uri", *source)
	addInput("alpha_uri", *alpha)
	addInput("reference_image_uri", *ref)
	if set["prompt"] {
		cfg.request["prompt"] = *prompt
	}
	if set["seed"] {
		cfg.request["seed"] = *seed
	}
	if set["max-resolution"] {
		cfg.request["max_resolution"] = *maxRes
	}
	if set["alpha-keyframe-index"] {
		cfg.request["alpha_keyframe_index"] = *keyframe
	}
	if *foreground {
		cfg.request["foreground"] = true
	}
	if *outputFormat != job.OutputFormatMP4 {
		cfg.request["output_format"] = *outputFormat
	}
	if *frames != "" {
		cfg.request["frames"] = *frames
	}
	if place != nil {
		cfg.request["placement"] = map[string]any{"scale": place.Scale, "x": place.X, "y": place.Y}
	}
	if set["callback-url"] {
		cfg.request["callback_url"] = *callback
	}
	if set["idempotency-key"] {
		cfg.request["idempotency_key"] = *idem
		cfg.hasIdem = true
	}
	return cfg, nil
}

// isRemoteURI reports whether v is a URI the server fetches itself rather
// than a local path.
func isRemoteURI(v string) bool {
	l := strings.ToLower(v)
	return strings.HasPrefix(l, "https://") || strings.HasPrefix(l, "http://") ||
		strings.HasPrefix(l, "vfx://") || strings.HasPrefix(l, "data:")
}

// cmdSubmit is `vfx submit`: upload, submit, wait, download.
func cmdSubmit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	codec.Quiet() // --fit decodes and scales: no FFmpeg lines on the terminal
	cfg, err := parseSubmitFlags(args, stderr, os.Getenv)
	if err != nil {
		return err
	}
	return runSubmit(ctx, cfg, stdout, stderr)
}

// runSubmit does the work of `vfx submit` for a parsed command line.
func runSubmit(ctx context.Context, cfg submitConfig, stdout, stderr io.Writer) error {
	start := time.Now()
	c, err := cfg.conn.client(true, false)
	if err != nil {
		return err
	}
	if cfg.fit {
		tmp, err := os.MkdirTemp("", "vfx-fit-")
		if err != nil {
			return fmt.Errorf("--fit: %w", err)
		}
		defer os.RemoveAll(tmp)
		local := map[string]string{}
		for field, what := range map[string]string{"source_uri": "source", "alpha_uri": "alpha"} {
			if p, ok := cfg.files[field]; ok {
				local[what] = p
			}
		}
		got, err := localfile.Fit(ctx, local, tmp, stderr)
		if err != nil {
			return err
		}
		for field, what := range map[string]string{"source_uri": "source", "alpha_uri": "alpha"} {
			if p, ok := got[what]; ok {
				cfg.files[field] = p
			}
		}
	}
	for _, field := range cfg.fieldSeq {
		uri, err := upload(ctx, c, cfg.files[field])
		if err != nil {
			return err
		}
		cfg.request[field] = uri
	}
	// Without --idempotency-key, Submit adds a key of its own: resending
	// after a 5xx or a lost answer is safe.
	job, err := c.Submit(ctx, cfg.request)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, job.ID)
	if cfg.noWait {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	bar := &jobBar{w: stderr, tty: isTerminal(stderr), start: start}
	job, err = c.Wait(wctx, job, bar)
	bar.finish()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return fmt.Errorf("job %s still %s after --timeout %s", job.ID, job.Status, cfg.timeout)
		}
		return fmt.Errorf("job %s: %w", job.ID, err)
	}
	if job.Status == "failed" {
		return fmt.Errorf("job %s failed: %s", job.ID, client.OneLine(job.Error))
	}
	dir := cfg.out
	if dir == "" {
		dir = filepath.Join("out", job.ID)
	}
	files, err := c.DownloadOutputs(wctx, job.Output, dir)
	if err != nil {
		return fmt.Errorf("job %s: %w", job.ID, err)
	}
	fmt.Fprintf(stdout, "%s %s in %.1f s, seed %d: %s\n", job.ID, job.Status, time.Since(start).Seconds(), job.Seed, strings.Join(files, " "))
	return nil
}

// upload checks a local file (readable; a name the API accepts) and
// uploads it, returning its vfx:// URI.
func upload(ctx context.Context, c *client.Client, file string) (string, error) {
	if err := localfile.Check("upload", file); err != nil {
		return "", err
	}
	if client.ContentType(file) == "application/octet-stream" {
		return "", fmt.Errorf("INVALID_FILE_FORMAT: upload: %s: the name must end in .png, .jpg, .jpeg or .webp (images), .mp4 or .mov (videos), or .zip or .tar (an archive of PNG or EXR frames, a video); accepted: %s",
			file, codec.AcceptedFormats)
	}
	return c.Upload(ctx, file)
}

// jobBar shows a job's progress (a client.Progress): a redrawn bar on a
// terminal, otherwise one line per status change.
type jobBar struct {
	w     io.Writer
	tty   bool
	start time.Time
	last  string // last status shown
	drawn bool
	// procStart is when the job was first seen processing: the time left
	// is estimated from the progress made since.
	procStart time.Time
	eta       etaEstimator
}

// Update shows the job's status and progress.
func (b *jobBar) Update(j client.Job) {
	pct := 0
	if j.Progress != nil {
		pct = min(max(*j.Progress, 0), 100)
	}
	if j.Status == "completed" {
		pct = 100
	}
	if !b.tty {
		if j.Status != b.last {
			fmt.Fprintf(b.w, "%s: %s (%.1f s)\n", j.ID, j.Status, time.Since(b.start).Seconds())
			b.last = j.Status
		}
		return
	}
	if j.Status == "processing" && b.procStart.IsZero() {
		b.procStart = time.Now()
	}
	left := ""
	if !b.procStart.IsZero() && !j.Terminal() {
		b.eta.observe(time.Since(b.procStart), float64(pct)/100)
		left = b.eta.String()
	}
	const width = 30
	fill := pct * width / 100
	fmt.Fprintf(b.w, "\r\x1b[K[%s%s] %3d%% %-10s %6.1f s  %s", strings.Repeat("#", fill), strings.Repeat(".", width-fill),
		pct, j.Status, time.Since(b.start).Seconds(), left)
	b.last = j.Status
	b.drawn = true
}

// Waiting says that polling pauses for d (rate limited).
func (b *jobBar) Waiting(j client.Job, d time.Duration) {
	if b.tty {
		fmt.Fprintf(b.w, "\r\x1b[K%s: rate limited, next read in %.0f s", j.ID, d.Seconds())
		b.drawn = true
		return
	}
	fmt.Fprintf(b.w, "%s: rate limited, next read in %.0f s\n", j.ID, d.Seconds())
}

// finish ends the bar's line.
func (b *jobBar) finish() {
	if b.tty && b.drawn {
		fmt.Fprintln(b.w)
	}
}
