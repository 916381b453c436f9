package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/internal/retry"
	"github.com/vfxrender/vfx/job"
)

// Polling of `vfx submit`: the first read after pollMin, then each pause
// 1.5 times longer up to pollMax; a 429 waits its Retry-After.
const (
	pollMin = 500 * time.Millisecond
	pollMax = 2 * time.Second
	// maxTransient is how many transient failures in a row (5xx, network)
	// polling or a transfer survives.
	maxTransient = 5
)

// terminal reports whether a generation job has finished.
func terminal(j api.Job) bool { return j.Status == "completed" || j.Status == "failed" }

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
		got, err := fitInputs(ctx, local, tmp, stderr)
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
		uri, err := c.upload(ctx, cfg.files[field])
		if err != nil {
			return err
		}
		cfg.request[field] = uri
	}
	if !cfg.hasIdem {
		// A key of our own makes resending after a 5xx or a lost answer safe.
		var b [12]byte
		_, _ = rand.Read(b[:])
		cfg.request["idempotency_key"] = "vfx-cli-" + hex.EncodeToString(b[:])
	}
	_, _, raw, err := c.call(ctx, http.MethodPost, "/v1/vfx/generations", cfg.request, callOptions{retry: true})
	if err != nil {
		return err
	}
	var job api.Job
	if err := json.Unmarshal(raw, &job); err != nil || job.ID == "" {
		return fmt.Errorf("submit: unexpected answer: %s", oneLine(string(raw)))
	}
	fmt.Fprintln(stdout, job.ID)
	if cfg.noWait {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	bar := &jobBar{w: stderr, tty: isTerminal(stderr), start: start}
	job, err = c.wait(wctx, job, bar)
	bar.finish()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return fmt.Errorf("job %s still %s after --timeout %s", job.ID, job.Status, cfg.timeout)
		}
		return fmt.Errorf("job %s: %w", job.ID, err)
	}
	if job.Status == "failed" {
		return fmt.Errorf("job %s failed: %s", job.ID, oneLine(job.Error))
	}
	dir := cfg.out
	if dir == "" {
		dir = filepath.Join("out", job.ID)
	}
	files, err := c.downloadOutputs(wctx, job.Output, dir)
	if err != nil {
		return fmt.Errorf("job %s: %w", job.ID, err)
	}
	fmt.Fprintf(stdout, "%s %s in %.1f s, seed %d: %s\n", job.ID, job.Status, time.Since(start).Seconds(), job.Seed, strings.Join(files, " "))
	return nil
}

// contentType maps the upload extensions (docs/api.md, Uploads) to MIME types.
func contentType(file string) string {
	switch strings.ToLower(filepath.Ext(file)) {
	case ".mp4":
		return "video/mp4"
	case ".mov":
		return "video/quicktime"
	case ".png":
		return "image/png"
	case ".jpg", ".jpeg":
		return "image/jpeg"
	case ".webp":
		return "image/webp"
	case ".mp3":
		return "audio/mpeg"
	case ".wav":
		return "audio/wav"
	case ".zip":
		return "application/zip"
	case ".tar":
		return "application/x-tar"
	}
	return "application/octet-stream"
}

// upload sends a local file through POST /v1/uploads and a PUT to the
// returned URL, streaming it from disk, and returns its vfx:// URI.
func (c *apiClient) upload(ctx context.Context, file string) (string, error) {
	if err := checkLocalFile("upload", file); err != nil {
		return "", err
	}
	if contentType(file) == "application/octet-stream" {
		return "", fmt.Errorf("INVALID_FILE_FORMAT: upload: %s: the name must end in .png, .jpg, .jpeg or .webp (images), .mp4 or .mov (videos), or .zip or .tar (an archive of PNG or EXR frames, a video); accepted: %s",
			file, codec.AcceptedFormats)
	}
	st, err := os.Stat(file)
	if err != nil {
		return "", fmt.Errorf("upload: %w", err)
	}
	_, _, raw, err := c.call(ctx, http.MethodPost, "/v1/uploads", map[string]string{"filename": filepath.Base(file)}, callOptions{retry: true})
	if err != nil {
		return "", fmt.Errorf("upload %s: %w", file, err)
	}
	var rec struct {
		UploadURL string `json:"upload_url"`
		VfxURI    string `json:"vfx_uri"`
	}
	if err := json.Unmarshal(raw, &rec); err != nil || rec.UploadURL == "" || rec.VfxURI == "" {
		return "", fmt.Errorf("upload %s: unexpected answer: %s", file, oneLine(string(raw)))
	}
	ctype := contentType(file)
	err = c.transient(ctx, func(ctx context.Context) (bool, error) {
		return c.putFile(ctx, rec.UploadURL, file, st.Size(), ctype)
	})
	if err != nil {
		return "", fmt.Errorf("upload %s: %w", file, err)
	}
	return rec.VfxURI, nil
}

// transient calls f, which says whether its failure is worth another
// attempt, up to maxTransient times, pausing 1 s, 2 s, then 4 s before
// each new attempt.
func (c *apiClient) transient(ctx context.Context, f func(context.Context) (bool, error)) error {
	again := false
	return retry.Do(ctx, retry.Options{
		Backoff:   retry.Backoff{Initial: time.Second, Max: 4 * time.Second},
		Attempts:  maxTransient,
		Sleep:     c.sleep,
		Retryable: func(error) (bool, time.Duration) { return again, 0 },
	}, func(ctx context.Context) (err error) {
		again, err = f(ctx)
		return err
	})
}

// putFile PUTs one file to a presigned URL and says whether a failure is
// worth another attempt.
func (c *apiClient) putFile(ctx context.Context, u, file string, size int64, ctype string) (bool, error) {
	f, err := os.Open(file)
	if err != nil {
		return false, err
	}
	defer f.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, f)
	if err != nil {
		return false, err
	}
	req.ContentLength = size // a plain body, not chunked: presigned S3 PUTs need the length
	if size == 0 {
		req.Body = http.NoBody
	}
	req.Header.Set("Content-Type", ctype)
	res, err := c.hc.Do(req)
	if err != nil {
		return true, err
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return res.StatusCode >= 500, parseAPIError(res.StatusCode, res.Header, raw)
	}
	return false, nil
}

// wait polls the job until it ends, with a growing pause between reads;
// a 429 waits its Retry-After, and an exhausted read budget
// (X-RateLimit-Remaining 0) waits for X-RateLimit-Reset.
func (c *apiClient) wait(ctx context.Context, job api.Job, bar *jobBar) (api.Job, error) {
	bar.update(job)
	if terminal(job) {
		return job, nil
	}
	path := "/v1/vfx/generations/" + url.PathEscape(job.ID)
	delay := pollMin
	transient := 0
	// Each round sleeps at least pollMin, so the context's deadline
	// bounds the loop; maxRounds is a backstop for a context without one.
	const maxRounds = 1_000_000
	for range maxRounds {
		if err := c.sleep(ctx, delay); err != nil {
			return job, err
		}
		_, h, raw, err := c.once(ctx, http.MethodGet, path, nil, false)
		var ae *apiError
		switch {
		case err == nil:
			transient = 0
		case errors.As(err, &ae) && ae.Status == http.StatusTooManyRequests:
			delay = max(ae.RetryAfter, pollMin)
			bar.waiting(job, delay)
			continue
		case ctx.Err() != nil:
			return job, ctx.Err()
		case (!errors.As(err, &ae) || ae.Status >= 500) && transient < maxTransient:
			transient++
			delay = min(delay*2, 8*time.Second)
			continue
		default:
			return job, err
		}
		var next api.Job
		if err := json.Unmarshal(raw, &next); err != nil || next.ID == "" {
			return job, fmt.Errorf("unexpected answer: %s", oneLine(string(raw)))
		}
		job = next
		bar.update(job)
		if terminal(job) {
			return job, nil
		}
		delay = min(delay*3/2, pollMax)
		if h.Get("X-RateLimit-Remaining") == "0" {
			if reset, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil {
				if d := time.Until(time.Unix(reset, 0)); d > delay {
					delay = min(d, maxRetryWait)
					bar.waiting(job, delay)
				}
			}
		}
	}
	return job, fmt.Errorf("gave up after %d reads", maxRounds)
}

// downloadOutputs saves each output URL (render, source, alpha, then any
// others) into dir as <name><extension of the URL> and returns the paths.
func (c *apiClient) downloadOutputs(ctx context.Context, output map[string]string, dir string) ([]string, error) {
	if len(output) == 0 {
		return nil, errors.New("completed without output URLs")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(output))
	for k := range output {
		names = append(names, k)
	}
	rank := func(k string) int {
		if i := slices.Index([]string{"render", "source", "alpha"}, k); i >= 0 {
			return i
		}
		return 3
	}
	slices.SortFunc(names, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	paths := make([]string, 0, len(names))
	for _, name := range names {
		u, err := url.Parse(output[name])
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			return paths, fmt.Errorf("output %s: bad URL %q", name, output[name])
		}
		base := filepath.Base(filepath.Clean("/" + name)) // keep the name a plain file name
		dst := filepath.Join(dir, base+strings.ToLower(path.Ext(u.Path)))
		err = c.transient(ctx, func(ctx context.Context) (bool, error) { return c.download(ctx, u.String(), dst) })
		if err != nil {
			return paths, fmt.Errorf("download %s: %w", name, err)
		}
		paths = append(paths, dst)
	}
	return paths, nil
}

// download GETs a signed URL (no API key: the signature is the
// credential) into dst through a temporary file, and says whether a
// failure is worth another attempt.
func (c *apiClient) download(ctx context.Context, u, dst string) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, err
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return true, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		return res.StatusCode >= 500, parseAPIError(res.StatusCode, res.Header, raw)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".download-*")
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	n, err := io.Copy(tmp, res.Body)
	if err == nil {
		err = tmp.Chmod(0o644) // CreateTemp makes 0600; outputs are ordinary files
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return true, err
	}
	if res.ContentLength >= 0 && n != res.ContentLength {
		return true, fmt.Errorf("got %d of %d bytes", n, res.ContentLength)
	}
	return false, os.Rename(tmp.Name(), dst)
}

// jobBar shows a job's progress: a redrawn bar on a terminal, otherwise
// one line per status change.
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

// update shows the job's status and progress.
func (b *jobBar) update(j api.Job) {
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
	if !b.procStart.IsZero() && !terminal(j) {
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

// waiting says that polling pauses for d (rate limited).
func (b *jobBar) waiting(j api.Job, d time.Duration) {
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
