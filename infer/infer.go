// Package infer runs segmentation networks through ONNX Runtime: the
// runtime's environment, one session per model, model cards with their
// checksums and licences, and the CPU and CUDA execution providers.
// Tensors in, tensors out: it knows nothing of mattes, jobs or FFmpeg.
//
// ONNX Runtime's C library is loaded by path (it is not linked), so a
// binary built with this package starts on machines without it; Open
// reports a missing library with the command that installs it.
package infer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	ort "github.com/yalue/onnxruntime_go"
)

// Errors callers branch on.
var (
	// ErrNoRuntime is a missing or unloadable ONNX Runtime library.
	ErrNoRuntime = errors.New("infer: ONNX Runtime library not available")
	// ErrNoModel is a model file that is not installed.
	ErrNoModel = errors.New("infer: model not installed")
	// ErrChecksum is a model file whose size or sha256 differs from its card.
	ErrChecksum = errors.New("infer: model file does not match its card")
	// ErrCard is an incomplete or unreadable model card.
	ErrCard = errors.New("infer: bad model card")
	// ErrProvider is an execution provider that cannot be used here.
	ErrProvider = errors.New("infer: execution provider unavailable")
	// ErrShape is an input or output buffer of the wrong size.
	ErrShape = errors.New("infer: tensor size mismatch")
)

// InstallHint is appended to missing-runtime and missing-model errors.
const InstallHint = "install the runtime and the default model with `make models` (or scripts/models.sh), or set VFX_MODEL_DIR to a folder that holds them"

// LibraryFile is the ONNX Runtime library's file name in the model directory.
const LibraryFile = "libonnxruntime.so.1"

// Provider is an ONNX Runtime execution provider.
type Provider string

// The execution providers.
const (
	CPU  Provider = "cpu"
	CUDA Provider = "cuda"
)

// DefaultDir is the model directory: $VFX_MODEL_DIR, else
// $XDG_CACHE_HOME/vfx/models, else ~/.cache/vfx/models.
func DefaultDir() string {
	if d := os.Getenv("VFX_MODEL_DIR"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "vfx", "models")
	}
	return filepath.Join(os.TempDir(), "vfx-models")
}

// Options configure a Runtime.
type Options struct {
	// Dir holds the library (LibraryFile) and the model files; "" is DefaultDir.
	Dir string
	// Library overrides the library's path.
	Library string
	// Provider is CPU (the default) or CUDA.
	Provider Provider
	// Threads is the intra-op thread count of each session (0 = all cores).
	Threads int
}

// Runtime is ONNX Runtime loaded into this process. ONNX Runtime has one
// environment per process: the first Open initialises it and it lives as
// long as the process (Close releases only this Runtime's sessions).
type Runtime struct {
	o   Options
	mu  sync.Mutex
	mod []*Model
}

// Open loads the ONNX Runtime library. It fails with ErrNoRuntime when the
// library is missing or cannot be loaded.
func Open(o Options) (*Runtime, error) {
	if o.Dir == "" {
		o.Dir = DefaultDir()
	}
	if o.Library == "" {
		o.Library = filepath.Join(o.Dir, LibraryFile)
	}
	if o.Provider == "" {
		o.Provider = CPU
	}
	if o.Provider != CPU && o.Provider != CUDA {
		return nil, fmt.Errorf("%w: %q (want cpu or cuda)", ErrProvider, o.Provider)
	}
	if o.Threads <= 0 {
		o.Threads = runtime.NumCPU()
	}
	if !ort.IsInitialized() {
		if _, err := os.Stat(o.Library); err != nil {
			return nil, fmt.Errorf("%w: %s: %v; %s", ErrNoRuntime, o.Library, err, InstallHint)
		}
		ort.SetSharedLibraryPath(o.Library)
		if err := ort.InitializeEnvironment(ort.WithLogLevelError()); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrNoRuntime, o.Library, err)
		}
	}
	return &Runtime{o: o}, nil
}

// Version is the loaded ONNX Runtime's version.
func (r *Runtime) Version() string { return ort.GetVersion() }

// Provider is the execution provider sessions use.
func (r *Runtime) Provider() Provider { return r.o.Provider }

// Dir is the model directory.
func (r *Runtime) Dir() string { return r.o.Dir }

// Close destroys the sessions of every model loaded through r.
func (r *Runtime) Close() error {
	r.mu.Lock()
	mods := r.mod
	r.mod = nil
	r.mu.Unlock()
	var errs []error
	for _, m := range mods {
		errs = append(errs, m.Close())
	}
	return errors.Join(errs...)
}

// Model is one loaded network: a session shared by every job of the
// process. Run is safe for concurrent use; the runs of one model take
// turns, since each already uses every thread the runtime was given.
type Model struct {
	card Card
	path string
	sess *ort.DynamicAdvancedSession
	feat bool       // the session has the feature output (Card.Features)
	int8 bool       // the session runs the 8-bit graph (Card.Int8, CPU)
	mu   sync.Mutex // guards sess against Close during Run
}

// Int8 reports whether the model runs in 8 bits (QuantizeGraph).
func (m *Model) Int8() bool { return m.int8 }

// Load verifies c's file in the model directory (ErrNoModel, ErrChecksum)
// and opens its session with r's provider (ErrProvider when the provider
// cannot be used). Load reads the whole file to check it; ctx is checked
// before the session is made.
func (r *Runtime) Load(ctx context.Context, c Card) (*Model, error) {
	// The graph is rewritten in memory (the file stays the verified one):
	// rescaled when a scalable model runs at another size (Card.At), and
	// in fp32 on the CPU provider, which has no fp16 kernels for most ops
	// on x86 and would otherwise wrap them in casts (Float32Graph: IS-Net
	// runs about 7% faster, same output to 3e-4). CUDA keeps fp16. A
	// rewritten graph is made from the bytes that were checked, read once.
	rescale, widen, feat := c.Native != 0, r.o.Provider == CPU, c.Features != ""
	// On the CPU provider a card with a calibration runs in 8 bits
	// (QuantizeGraph: an IS-Net run at 1024 about 0.37 s against 0.97 s
	// in fp32 here; docs/mattes.md).
	quant := widen && c.Int8 != nil
	var (
		path string
		data []byte
		err  error
	)
	if rescale || widen || feat || quant {
		path = filepath.Join(r.o.Dir, c.File)
		data, err = c.Read(r.o.Dir)
	} else {
		path, err = c.Verify(r.o.Dir)
	}
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	so, err := sessionOptions(r.o.Threads)
	if err != nil {
		return nil, err
	}
	defer so.Destroy()
	// The CPU arena stays on: without it every op maps and unmaps its
	// activations, which cost 20x the run time in system calls here.
	if r.o.Provider == CUDA {
		co, err := ort.NewCUDAProviderOptions()
		if err != nil {
			return nil, fmt.Errorf("%w: cuda: %v", ErrProvider, err)
		}
		err = so.AppendExecutionProviderCUDA(co)
		co.Destroy()
		if err != nil {
			return nil, fmt.Errorf("%w: cuda (needs libonnxruntime_providers_cuda.so beside the library, CUDA 12 and cuDNN 9): %v", ErrProvider, err)
		}
	}
	var sess *ort.DynamicAdvancedSession
	outs := []string{c.Output}
	if feat {
		outs = append(outs, FeatureOutput)
	}
	if rescale || widen || feat {
		// err is the function's: the session's error below is checked
		// after the if (a := here shadowed it, and a failed session of a
		// rescaled graph went unnoticed).
		var orig []byte
		if data, orig, err = c.graph(data, feat, widen, outs); err != nil {
			return nil, err
		}
		if quant {
			q, qerr := QuantizeGraph(data, c.Int8.Ranges)
			if qerr == nil {
				sess, err = ort.NewDynamicAdvancedSessionWithONNXData(q, []string{c.Input}, outs, so)
			}
			if qerr != nil || err != nil {
				return nil, fmt.Errorf("infer: model %s in 8 bits: %w", c.Name, errors.Join(qerr, err))
			}
		} else {
			sess, err = ort.NewDynamicAdvancedSessionWithONNXData(data, []string{c.Input}, outs, so)
		}
		if err != nil && widen && !quant {
			// A graph that the fp32 rewrite does not cover (an fp16 type
			// in an attribute it does not know, say) runs as it was:
			// slower, never different.
			sess, err = ort.NewDynamicAdvancedSessionWithONNXData(orig, []string{c.Input}, outs, so)
		}
	} else {
		sess, err = ort.NewDynamicAdvancedSession(path, []string{c.Input}, outs, so)
	}
	if err != nil {
		return nil, fmt.Errorf("infer: model %s: session: %w", c.Name, err)
	}
	m := &Model{card: c, path: path, sess: sess, feat: feat, int8: quant}
	r.mu.Lock()
	r.mod = append(r.mod, m)
	r.mu.Unlock()
	return m, nil
}

// Card is the model's card.
func (m *Model) Card() Card { return m.card }

// Close destroys the session; later runs fail. It is idempotent.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sess == nil {
		return nil
	}
	err := m.sess.Destroy()
	m.sess = nil
	return err
}

// Run runs the network on in (NCHW float32, 3 x Height x Width, already
// normalised) and writes its first output (Height x Width) to out. A
// cancelled ctx terminates the run in progress.
func (m *Model) Run(ctx context.Context, in, out []float32) error {
	return m.run(ctx, in, out, nil)
}

// run is Run; when the session has the feature output, feat (if set)
// receives it before it is freed.
func (m *Model) run(ctx context.Context, in, out []float32, feat func(ort.Value) error) error {
	c := m.card
	n := c.Width * c.Height
	if len(in) != 3*n || len(out) != n {
		return fmt.Errorf("%w: input %d (want %d), output %d (want %d)", ErrShape, len(in), 3*n, len(out), n)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	it, err := ort.NewTensor(ort.NewShape(1, 3, int64(c.Height), int64(c.Width)), in)
	if err != nil {
		return fmt.Errorf("infer: input tensor: %w", err)
	}
	defer it.Destroy()
	ot, err := ort.NewTensor(ort.NewShape(1, 1, int64(c.Height), int64(c.Width)), out)
	if err != nil {
		return fmt.Errorf("infer: output tensor: %w", err)
	}
	defer ot.Destroy()
	ro, err := ort.NewRunOptions()
	if err != nil {
		return fmt.Errorf("infer: run options: %w", err)
	}
	defer ro.Destroy()
	stop := context.AfterFunc(ctx, func() { _ = ro.Terminate() })
	defer stop()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sess == nil {
		return fmt.Errorf("infer: model %s is closed", c.Name)
	}
	outs := []ort.Value{ot}
	if m.feat {
		outs = append(outs, nil) // allocated by the runtime
	}
	err = m.sess.RunWithOptions([]ort.Value{it}, outs, ro)
	if len(outs) == 2 && outs[1] != nil {
		defer outs[1].Destroy()
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("infer: model %s: run: %w", c.Name, err)
	}
	if feat != nil && len(outs) == 2 {
		return feat(outs[1])
	}
	return nil
}

// isInit reports whether ONNX Runtime is loaded in this process.
func isInit() bool { return ort.IsInitialized() }

// Warm runs the model twice on a blank input. ONNX Runtime's first two
// runs of a session are several times slower than the rest (8–10 s
// against 1.5 s for IS-Net on 2 cores: the arena grows, kernels are
// chosen), so a long-lived worker pays them at start, not in its first
// job. It takes the model's turn like any run.
func (m *Model) Warm(ctx context.Context) error {
	c := m.card
	in := make([]float32, 3*c.Width*c.Height)
	out := make([]float32, c.Width*c.Height)
	for i := 0; i < 2; i++ {
		if err := m.Run(ctx, in, out); err != nil {
			return fmt.Errorf("infer: warm %s: %w", c.Name, err)
		}
	}
	return nil
}

// sessionOptions are the options of every session: threads intra-op
// threads (0 = all cores), one inter-op thread, no spinning and no memory
// pattern. The caller destroys them.
func sessionOptions(threads int) (*ort.SessionOptions, error) {
	so, err := ort.NewSessionOptions()
	if err != nil {
		return nil, fmt.Errorf("infer: session options: %w", err)
	}
	// Worker threads that spin between ops waste a shared node's cores
	// (and slow a loaded machine by an order of magnitude): let them sleep.
	// No memory pattern: it plans one block for every activation of a
	// run, and IS-Net's peak RSS is then 2.45 GB against 1.53 GB without
	// it, at the same speed (BenchmarkSegmentISNet).
	err = errors.Join(so.SetIntraOpNumThreads(threads), so.SetInterOpNumThreads(1), so.SetMemPattern(false),
		so.AddSessionConfigEntry("session.intra_op.allow_spinning", "0"))
	if err != nil {
		so.Destroy()
		return nil, fmt.Errorf("infer: session options: %w", err)
	}
	return so, nil
}

// graph is c's model file data rewritten as the session runs it:
// rescaled when the card runs at another size (Card.At), with the
// feature output when feat, and, when widen (the CPU provider), in fp32
// (Float32Graph) with only the outputs outs (PruneGraph: ONNX Runtime
// runs every node otherwise, and IS-Net's five unused side outputs cost
// about 5%). orig is the graph before the fp32 rewrite.
func (c Card) graph(data []byte, feat, widen bool, outs []string) (out, orig []byte, err error) {
	if c.Native != 0 {
		if data, err = ScaleGraph(data, c.Width, c.Native); err != nil {
			return nil, nil, fmt.Errorf("infer: model %s at %d: %w", c.Name, c.Width, err)
		}
	}
	if feat {
		if data, err = AddFeatureOutput(data, c.Features); err != nil {
			return nil, nil, fmt.Errorf("infer: model %s: %w", c.Name, err)
		}
	}
	orig = data
	if widen {
		if data, err = Float32Graph(data); err != nil {
			return nil, nil, fmt.Errorf("infer: model %s in fp32: %w", c.Name, err)
		}
		if data, err = PruneGraph(data, outs...); err != nil {
			return nil, nil, fmt.Errorf("infer: model %s: %w", c.Name, err)
		}
	}
	return data, orig, nil
}
