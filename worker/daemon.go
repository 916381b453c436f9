package worker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

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
	// validateJob, when set, replaces job.Validate (a test counts the
	// calls: one a job).
	validateJob job.Validator
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
		if jr.GenerationType == "" {
			// Only a product job's type may follow its source: refuse
			// this one with the field rules' answer (generate would
			// otherwise take the source's kind).
			if _, err := dm.validate(jr); err != nil {
				return err
			}
			return inputErr(job.CodeInvalidGenerationType, "generation_type is required")
		}
		if out, err = dm.generate(ctx, d, jr, dir, "jobs/"+d.JobID, "", log); err != nil {
			return err
		}
	case queue.KindProduct:
		if out, err = dm.product(ctx, d, rec, dir, log); err != nil {
			return err
		}
	default:
		return inputErr(job.CodeInvalidInput, "job kind %q: this worker does %s and %s jobs", rec.Kind, queue.KindGeneration, queue.KindProduct)
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
// prefix. productMode is the product job's inputs.mode (not the alpha mode):
// job.ModeFast renders at 2/3 of the size and upscales the render.
func (dm *Daemon) generate(ctx context.Context, d *queue.Delivery, jr job.JobRequest, dir, prefix, productMode string, log *zap.Logger) (jobOutput, error) {
	// The request's field rules, once, before anything is fetched; a
	// product job whose source was not at hand at submission has no
	// generation type yet: its source's kind decides it, below.
	var valid job.Valid
	if jr.GenerationType != "" {
		v, err := dm.validate(jr)
		if err != nil {
			return jobOutput{}, err
		}
		valid = v
	}
	req, err := dm.fetch(ctx, jr, dir)
	if err != nil {
		return jobOutput{}, err
	}
	if src, ok, err := ArchiveSource(ctx, *req.Source, dir, dm.Pipeline.limits(), codec.Rational{Num: ArchiveFPS, Den: 1}); err != nil {
		return jobOutput{}, err
	} else if ok {
		req.Source = &src
	}
	var stdW, stdH int
	if jr.GenerationType == "" || productMode == job.ModeFast {
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
			if valid, err = dm.validate(jr); err != nil {
				return jobOutput{}, err
			}
		}
		maxRes := req.MaxResolution
		if maxRes == 0 {
			maxRes = job.DefaultMaxResolution
		}
		stdW, stdH = render.OutputSize(info.DisplayWidth, info.DisplayHeight, maxRes, jr.GenerationType == "video")
		if productMode == job.ModeFast {
			req.RenderShortSide = FastShortSide(min(stdW, stdH))
		}
	}
	if jr.Frames != "" {
		first, last, err := job.ParseFrames(jr.Frames)
		if err != nil {
			return jobOutput{}, err
		}
		if err := TrimFrames(ctx, &req, first, last, dir, dm.Pipeline.limits()); err != nil {
			return jobOutput{}, err
		}
	}
	pj, err := Prepare(valid, req)
	if err != nil {
		return jobOutput{}, err
	}
	p := *dm.Pipeline
	var stopProgress func()
	p.Progress, p.MatteProgress, stopProgress = dm.progress(ctx, d, log)
	res, err := p.Run(ctx, pj, filepath.Join(dir, "out"))
	stopProgress()
	if err != nil {
		return jobOutput{}, err
	}
	if productMode == job.ModeFast && (res.Width != stdW || res.Height != stdH) {
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
		zap.Float64("render_s", secs), zap.String("mode", productMode))
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

// progress returns the Pipeline.Progress and Pipeline.MatteProgress
// callbacks of one job and a stop function. The callbacks only store the
// counts; a goroutine writes the job's percent (JobFraction) to the record
// at most once per ProgressInterval, as long as this attempt still owns
// the record, capped at 99 % (100 comes with completion).
func (dm *Daemon) progress(ctx context.Context, d *queue.Delivery, log *zap.Logger) (render, matte func(done, total int), stop func()) {
	var done, total, mDone, mTotal atomic.Int64
	render = func(n, of int) {
		done.Store(int64(n))
		total.Store(int64(of))
	}
	matte = func(n, of int) {
		mDone.Store(int64(n))
		mTotal.Store(int64(of))
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
			t, mt := total.Load(), mTotal.Load()
			if t <= 0 && mt <= 0 {
				continue
			}
			pct := min(int(100*JobFraction(int(mDone.Load()), int(mt), int(done.Load()), int(t))), 99)
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
	return render, matte, func() {
		cancel()
		wg.Wait()
	}
}
