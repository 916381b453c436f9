package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/queue"
	"github.com/vfxrender/vfx/render"
	"github.com/vfxrender/vfx/store"
)

// DefaultProgressInterval is the least time between two progress updates
// of a job record.
const DefaultProgressInterval = time.Second

// settleTimeout bounds the record and queue calls made to settle a job
// after its handler context may have ended.
const settleTimeout = 30 * time.Second

// errNotOwner aborts a progress update of a job another attempt now owns.
var errNotOwner = errors.New("worker: job is owned by another attempt")

// Daemon does generation and product jobs from the queue (product jobs:
// see product, in daemon_product.go): it is the queue.Handler of
// `vfx worker`. For each delivery it claims the job record, fetches the
// inputs once into a per-job temp folder, runs the Pipeline, uploads the
// render, source and alpha files to deterministic keys
// (jobs/{id}/render.mp4 …), marks the record completed with those keys by
// compare-and-swap and publishes the job-finished event.
//
// Set the fields before the first Handle and do not change them
// afterwards; a Daemon is then safe for concurrent use (one Handle per
// consumer slot).
type Daemon struct {
	// Queue holds the job records and events. Required.
	Queue *queue.Queue
	// Store receives the outputs. Required.
	Store store.Store
	// Resolver opens the input URIs; nil means a Resolver on Store with
	// default limits (no SSRF allow-list, no http://).
	Resolver *store.Resolver
	// Pipeline renders; it is copied per job (its Progress is replaced).
	// Required.
	Pipeline *Pipeline
	// Name identifies this worker in job records and logs. Required.
	Name string
	// TempDir holds the per-job folders; empty means os.TempDir().
	TempDir string
	// Preset is the x264 preset of the render and source videos; empty
	// means DefaultPreset.
	Preset string
	// CRF is the x264 constant rate factor (1..51); 0 means DefaultCRF.
	CRF int
	// ProgressInterval is the least time between two progress updates of
	// a record; 0 means DefaultProgressInterval.
	ProgressInterval time.Duration
	// Logger receives one JSON line per job event, with job_id, attempt
	// and worker fields. Nil logs nothing.
	Logger *zap.Logger
	// Metrics, when set, records job outcomes and timings.
	Metrics *Metrics
}

var _ queue.Handler = (*Daemon)(nil).Handle

func (dm *Daemon) logger() *zap.Logger {
	if dm.Logger == nil {
		return zap.NewNop()
	}
	return dm.Logger
}

func (dm *Daemon) resolver() *store.Resolver {
	if dm.Resolver != nil {
		return dm.Resolver
	}
	return &store.Resolver{Store: dm.Store}
}

// Handle does one delivery; it is a queue.Handler for Consumer.Run, which
// settles the delivery from the result:
//
//   - the job completed (or had already finished): nil, and Run acks it;
//   - bad input (an *job.InputError, or an input URI that can never be
//     fetched): Handle fails the job itself (dead-letter copy, record
//     failed with an error string that starts with the error code,
//     message terminated), publishes the finished event and returns the
//     error marked queue.Permanent;
//   - ctx ended (Run's drain deadline passed): Handle releases the job at
//     once so another worker takes it, and returns ctx's error;
//   - anything else (object storage or NATS down, an https:// source
//     answering 5xx or timing out): the error, and Run retries the job
//     after its backoff delay.
//
// A redelivered job (its worker died or stopped heartbeating) is claimed
// again, rendered again and uploaded to the same keys; the record's
// compare-and-swap lets only one attempt complete it.
func (dm *Daemon) Handle(ctx context.Context, d *queue.Delivery) error {
	log := dm.logger().With(zap.String("job_id", d.JobID), zap.Int("attempt", d.Attempt), zap.String("worker", dm.Name))
	if dm.Queue == nil || dm.Store == nil || dm.Pipeline == nil || dm.Name == "" {
		return errors.New("worker: daemon needs Queue, Store, Pipeline and Name")
	}

	rec, err := d.Claim(ctx, dm.Name)
	switch {
	case errors.Is(err, queue.ErrTerminal):
		log.Info("job already finished; acknowledging", zap.String("status", string(rec.Status)))
		dm.republish(ctx, log, rec)
		dm.Metrics.outcome(OutcomeSkipped)
		return nil
	case errors.Is(err, queue.ErrNotFound):
		return dm.fail(ctx, d, log, fmt.Errorf("worker: job %s has no record", d.JobID))
	case err != nil:
		if ctx.Err() != nil {
			return dm.release(d, log, err)
		}
		log.Warn("claim failed; the job will be retried", zap.Error(err))
		dm.Metrics.outcome(OutcomeRetried)
		return fmt.Errorf("worker: claim: %w", err)
	}

	wait := -1.0
	if !rec.CreatedAt.IsZero() {
		wait = d.Received.Sub(rec.CreatedAt).Seconds()
	}
	dm.Metrics.started(d.Attempt, wait)
	defer dm.Metrics.finished()
	log.Info("job started", zap.String("kind", rec.Kind), zap.Float64("queue_wait_s", wait))

	err = dm.work(ctx, d, rec, log)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return dm.release(d, log, err)
	case permanent(err):
		return dm.fail(ctx, d, log, err)
	default:
		log.Warn("job failed; it will be retried", zap.Error(err))
		dm.Metrics.outcome(OutcomeRetried)
		return err
	}
}

// permanent reports whether err can never go away on retry.
func permanent(err error) bool {
	var ie *job.InputError
	return errors.As(err, &ie) || errors.Is(err, queue.ErrPermanent)
}

// fail ends the job for good: DLQ copy, record failed, message terminated
// (Delivery.Fail), then the finished event. The delivery is settled here,
// so Run leaves it alone whatever is returned.
func (dm *Daemon) fail(ctx context.Context, d *queue.Delivery, log *zap.Logger, cause error) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	perm := queue.Permanent(cause)
	if err := d.Fail(sctx, perm); err != nil {
		log.Error("could not fail the job; it comes back after AckWait", zap.NamedError("reason", cause), zap.Error(err))
		return perm
	}
	log.Warn("job failed", zap.String("code", string(job.CodeOf(cause))), zap.NamedError("reason", cause))
	dm.Metrics.outcome(OutcomeFailed)
	rec, _, err := dm.Queue.Get(sctx, d.JobID)
	if err == nil && rec.Status.Terminal() {
		dm.publish(sctx, log, rec)
	}
	return perm
}

// release hands the job back at once (drain deadline passed).
func (dm *Daemon) release(d *queue.Delivery, log *zap.Logger, cause error) error {
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	switch err := d.Release(ctx); {
	case err == nil, errors.Is(err, queue.ErrSettled): // ErrSettled: Run released it first
		log.Info("job released to another worker", zap.NamedError("cause", cause))
		dm.Metrics.outcome(OutcomeReleased)
	default:
		log.Warn("release failed; the job comes back after AckWait", zap.Error(err))
	}
	return fmt.Errorf("worker: job %s interrupted: %w", d.JobID, cause)
}

// publish publishes the finished event of a terminal record. A failed
// publish is logged only: for a completed job the caller returns an error
// instead (see work).
func (dm *Daemon) publish(ctx context.Context, log *zap.Logger, rec queue.Record) error {
	ev := queue.Event{JobID: rec.ID, Kind: rec.Kind, Status: rec.Status}
	if rec.CompletedAt != nil {
		ev.At = *rec.CompletedAt
	}
	if err := dm.Queue.PublishEvent(ctx, ev); err != nil {
		log.Warn("publish finished event", zap.Error(err))
		return err
	}
	return nil
}

// republish publishes again the event of a job found already finished: the
// worker that finished it may have died between the record update and the
// publish. The event's Nats-Msg-Id makes a second copy a no-op within the
// stream's duplicate window; outside it nothing is published, so an event
// is never stored twice.
func (dm *Daemon) republish(ctx context.Context, log *zap.Logger, rec queue.Record) {
	if rec.CompletedAt == nil || time.Since(*rec.CompletedAt) > dm.Queue.Config().DuplicateWindow-time.Minute {
		return
	}
	_ = dm.publish(ctx, log, rec)
}

// work runs a claimed job up to the completed record and its event.
func (dm *Daemon) work(ctx context.Context, d *queue.Delivery, rec queue.Record, log *zap.Logger) error {
	dir, releaseDir, err := newJobDir(dm.TempDir)
	if err != nil {
		return err
	}
	defer releaseDir()
	var out jobOutput
	switch rec.Kind {
	case queue.KindGeneration:
		jr, err := job.DecodeJobRequest(rec.Request)
		if err != nil {
			return err
		}
		if err := precheck(jr); err != nil {
			return err
		}
		if out, err = dm.generate(ctx, d, jr, dir, "jobs/"+d.JobID, "", log); err != nil {
			return err
		}
	case queue.KindProduct:
		if out, err = dm.product(ctx, d, rec, dir, log); err != nil {
			return err
		}
	default:
		return inputErr("INVALID_INPUT", "job kind %q: this worker does %s and %s jobs", rec.Kind, queue.KindGeneration, queue.KindProduct)
	}
	return dm.complete(ctx, d, out, log)
}

// jobOutput is what a finished job stores in its record.
type jobOutput struct {
	keys   map[string]string
	frames int
	secs   float64
}

// generate renders a generation request and uploads its outputs under
// prefix. mode job.ModeFast renders at 2/3 of the size and upscales the render.
func (dm *Daemon) generate(ctx context.Context, d *queue.Delivery, jr job.JobRequest, dir, prefix, mode string, log *zap.Logger) (jobOutput, error) {
	if jr.GenerationType != "" {
		if err := precheck(jr); err != nil {
			return jobOutput{}, err
		}
	}
	req, err := dm.fetch(ctx, jr, dir)
	if err != nil {
		return jobOutput{}, err
	}
	var stdW, stdH int
	if jr.GenerationType == "" || mode == job.ModeFast {
		// The source's kind decides the generation type of a product job
		// whose source was not at hand at submission.
		info, err := codec.Probe(ctx, *req.Source, dm.Pipeline.limits())
		if err != nil {
			return jobOutput{}, classify("source", err)
		}
		if jr.GenerationType == "" {
			jr.GenerationType = "image"
			if info.Kind == codec.KindVideo {
				jr.GenerationType = "video"
			}
			req.GenerationType = jr.GenerationType
			if err := precheck(jr); err != nil {
				return jobOutput{}, err
			}
		}
		maxRes := req.MaxResolution
		if maxRes == 0 {
			maxRes = job.DefaultMaxResolution
		}
		stdW, stdH = render.OutputSize(info.DisplayWidth, info.DisplayHeight, maxRes, jr.GenerationType == "video")
		if mode == job.ModeFast {
			req.RenderShortSide = FastShortSide(min(stdW, stdH))
		}
	}
	req.Foreground = jr.Foreground
	p := *dm.Pipeline
	report, stopProgress := dm.progress(ctx, d, log)
	p.Progress = report
	res, err := p.Run(ctx, req, filepath.Join(dir, "out"))
	stopProgress()
	if err != nil {
		return jobOutput{}, err
	}
	if mode == job.ModeFast && (res.Width != stdW || res.Height != stdH) {
		up := filepath.Join(dir, "out", "upscaled"+filepath.Ext(res.Render))
		if _, err := Upscale(ctx, p.Device, codec.FileInput(res.Render), up, UpscaleOptions{Width: stdW, Height: stdH,
			Preset: dm.Preset, CRF: dm.CRF}); err != nil {
			return jobOutput{}, fmt.Errorf("worker: fast mode upscale: %w", err)
		}
		res.Render = up
	}
	secs := res.Elapsed.Seconds()
	dm.Metrics.rendered(res.Frames, secs)
	log.Info("job rendered", zap.Int("frames", res.Frames), zap.Int("width", res.Width), zap.Int("height", res.Height),
		zap.Float64("render_s", secs), zap.String("mode", mode))
	keys, err := dm.upload(ctx, prefix, req.GenerationType == "video", res)
	if err != nil {
		return jobOutput{}, err
	}
	return jobOutput{keys: keys, frames: res.Frames, secs: secs}, nil
}

// FastShortSide is the shorter side fast mode renders at for a standard
// output whose shorter side is short: two thirds, rounded to even (1080 ->
// 720, 720 -> 480), at least 2.
func FastShortSide(short int) int {
	return max(2, 2*int(math.Round(float64(short)/3)))
}

// complete marks the record completed with the outputs and publishes the
// finished event.
func (dm *Daemon) complete(ctx context.Context, d *queue.Delivery, out jobOutput, log *zap.Logger) error {
	done, err := dm.Queue.Update(ctx, d.JobID, func(r *queue.Record) error {
		r.Status = queue.StatusCompleted
		r.Progress = 100
		r.Outputs = out.keys
		r.Frames = out.frames
		r.Error, r.ErrorCode = "", ""
		r.Worker = dm.Name
		r.Attempt = d.Attempt
		return nil
	})
	if errors.Is(err, queue.ErrTerminal) {
		// Another attempt of the same job finished first (its worker was
		// presumed dead but was not), or the job was cancelled; its
		// outputs are at the same keys.
		log.Info("job finished by another attempt meanwhile", zap.String("status", string(done.Status)))
		dm.republish(ctx, log, done)
		dm.Metrics.outcome(OutcomeSkipped)
		return nil
	}
	if err != nil {
		return fmt.Errorf("worker: complete record: %w", err)
	}
	if err := dm.publish(ctx, log, done); err != nil {
		// Retried: the redelivery finds the record completed and
		// publishes the event again.
		return fmt.Errorf("worker: %w", err)
	}
	log.Info("job completed", zap.Int("frames", out.frames), zap.Float64("render_s", out.secs),
		zap.Duration("total", time.Since(d.Received)))
	dm.Metrics.outcome(OutcomeCompleted)
	return nil
}

// precheck rejects a request whose fields are wrong before anything is
// fetched.
func precheck(jr job.JobRequest) error { return job.Validate(jr) }

// fetch resolves the request's input URIs and spools each one once into
// dir (the pipeline opens an input several times: probe, decode, audio).
func (dm *Daemon) fetch(ctx context.Context, jr job.JobRequest, dir string) (Request, error) {
	req := Request{
		GenerationType:     jr.GenerationType,
		AlphaMode:          jr.AlphaMode,
		AlphaKeyframeIndex: jr.AlphaKeyframeIndex,
		Prompt:             jr.Prompt,
		Seed:               jr.Seed,
		MaxResolution:      jr.MaxResolution,
		Preset:             dm.Preset,
		CRF:                dm.CRF,
	}
	if req.CRF == 0 {
		req.CRF = DefaultCRF
	}
	mode, _ := job.ParseAlphaMode(jr.AlphaMode)
	inputs := []struct {
		what, uri string
		dst       **codec.Input
	}{
		{"source", jr.SourceURI, &req.Source},
		{"alpha", jr.AlphaURI, &req.Alpha},
		{"reference", jr.ReferenceImageURI, &req.Reference},
	}
	for _, in := range inputs {
		if in.uri == "" || (in.what == "alpha" && !mode.NeedsMatte()) {
			continue
		}
		path, err := dm.spool(ctx, in.what, in.uri, dir)
		if err != nil {
			return Request{}, err
		}
		ci := codec.FileInput(path)
		*in.dst = &ci
	}
	return req, nil
}

// spool copies one input into a file of dir and returns its path.
func (dm *Daemon) spool(ctx context.Context, what, uri, dir string) (string, error) {
	rc, info, err := dm.resolver().Open(ctx, uri)
	if err != nil {
		return "", fetchError(what, err)
	}
	defer rc.Close()
	path := filepath.Join(dir, what+inputExt(info.Name))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return "", fmt.Errorf("worker: spool %s: %w", what, err)
	}
	n, err := io.Copy(f, io.LimitReader(ctxReader{ctx, rc}, store.MaxUploadBytes+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("worker: spool %s: %w", what, err)
	}
	if n > store.MaxUploadBytes {
		return "", &job.InputError{Code: job.CodeSourceTooLarge, Err: fmt.Errorf("%s: over %d bytes", what, store.MaxUploadBytes)}
	}
	return path, nil
}

// inputExt keeps a known media extension of an input's name as a hint for
// FFmpeg (formats are still judged by content).
func inputExt(name string) string {
	ext := strings.ToLower(filepath.Ext(name))
	switch ext {
	case ".mp4", ".mov", ".png", ".jpg", ".jpeg", ".webp":
		return ext
	}
	return ""
}

// fetchError turns a resolver error into an *job.InputError when fetching can
// never succeed, with its API error code (the store sentinels through
// codeTable, the one mapping):
//
//   - store.ErrInvalidURI, store.ErrInvalidKey, store.ErrForbiddenAddress: INVALID_URI;
//   - store.ErrMIMEMismatch: INVALID_FILE_FORMAT;
//   - store.ErrTooLarge: SOURCE_TOO_LARGE;
//   - store.ErrNotFound (a vfx:// upload that does not exist) and an
//     https:// answer 4xx other than 408, 425 and 429: SOURCE_UNREACHABLE.
//
// Everything else is transient and returned as a plain error to retry:
// object storage down, https:// 5xx, 408, 429, network errors and timeouts
// (those still start with SOURCE_UNREACHABLE, so the final error of a job
// that exhausts its attempts says what went wrong).
func fetchError(what string, err error) error {
	wrap := func(code job.Code) error {
		return &job.InputError{Code: code, Err: fmt.Errorf("%s: %w", what, err)}
	}
	var se *store.StatusError
	var ie *job.InputError
	switch {
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("worker: fetch %s: %w", what, err)
	case errors.As(classify(what, err), &ie):
		return ie
	case errors.As(err, &se) && se.StatusCode >= 400 && se.StatusCode < 500 &&
		se.StatusCode != http.StatusRequestTimeout && se.StatusCode != http.StatusTooEarly &&
		se.StatusCode != http.StatusTooManyRequests:
		return wrap(job.CodeSourceUnreachable)
	case errors.Is(err, store.ErrUnreachable):
		return fmt.Errorf("SOURCE_UNREACHABLE: %s: %w", what, err)
	}
	return fmt.Errorf("worker: fetch %s: %w", what, err)
}

// ctxReader makes reads fail once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// outputKeys are the deterministic object keys of a job's outputs under
// prefix ("jobs/<id>" or "product-jobs/<id>").
func outputKeys(prefix string, video bool) map[string]string {
	ext := "png"
	if video {
		ext = "mp4"
	}
	return map[string]string{
		job.OutputRender: prefix + "/render." + ext,
		job.OutputSource: prefix + "/source." + ext,
		job.OutputAlpha:  prefix + "/alpha." + ext,
	}
}

// upload puts the three outputs at their keys, replacing what an earlier
// attempt may have left there.
func (dm *Daemon) upload(ctx context.Context, prefix string, video bool, res Result) (map[string]string, error) {
	keys := outputKeys(prefix, video)
	ct := "image/png"
	if video {
		ct = "video/mp4"
	}
	files := map[string]string{job.OutputRender: res.Render, job.OutputSource: res.Source, job.OutputAlpha: res.Alpha}
	if res.Foreground != "" {
		files[job.OutputForeground] = res.Foreground
		keys[job.OutputForeground] = prefix + "/" + foregroundName(video)
	}
	g, gctx := errgroup.WithContext(ctx)
	for name, path := range files {
		key := keys[name]
		ct := ct
		if name == job.OutputForeground && video {
			ct = "video/quicktime"
		}
		g.Go(func() error {
			f, err := os.Open(path)
			if err != nil {
				return fmt.Errorf("worker: upload %s: %w", name, err)
			}
			defer f.Close()
			st, err := f.Stat()
			if err != nil {
				return fmt.Errorf("worker: upload %s: %w", name, err)
			}
			if _, err := dm.Store.Put(gctx, key, f, st.Size(), ct); err != nil {
				return fmt.Errorf("worker: upload %s: %w", name, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return keys, nil
}

// progress returns the Pipeline.Progress callback of one job and a stop
// function. The callback only stores the count; a goroutine writes it to
// the record at most once per ProgressInterval, as long as this attempt
// still owns the record, capped at 99 % (100 comes with completion).
func (dm *Daemon) progress(ctx context.Context, d *queue.Delivery, log *zap.Logger) (func(done, total int), func()) {
	var done, total atomic.Int64
	report := func(n, of int) {
		done.Store(int64(n))
		total.Store(int64(of))
	}
	interval := dm.ProgressInterval
	if interval <= 0 {
		interval = DefaultProgressInterval
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		last := -1
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			t := total.Load()
			if t <= 0 {
				continue
			}
			pct := int(min(done.Load()*100/t, 99))
			if pct == last {
				continue
			}
			uctx, ucancel := context.WithTimeout(ctx, max(interval, 5*time.Second))
			_, err := dm.Queue.Update(uctx, d.JobID, func(r *queue.Record) error {
				if r.Status != queue.StatusProcessing || r.Attempt != d.Attempt || r.Worker != dm.Name {
					return errNotOwner
				}
				r.Progress = pct
				return nil
			})
			ucancel()
			switch {
			case err == nil:
				last = pct
			case errors.Is(err, errNotOwner), errors.Is(err, queue.ErrTerminal):
				log.Info("stopping progress reports", zap.Error(err))
				return
			case ctx.Err() == nil:
				log.Warn("progress update failed", zap.Error(err))
			}
		}
	}()
	return report, func() {
		cancel()
		wg.Wait()
	}
}
