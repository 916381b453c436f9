package deps

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/vfxrender/vfx/"

// pixel packages: the ones that hold or move pixels, or link FFmpeg or a
// compute device.
var pixel = []string{"render", "matte", "kernels", "kernels/cpuref", "kernels/rows", "codec", "codec/exr", "frame", "infer"}

// library is the product code: every package but the command (which wires
// `vfx bench` and may import bench), bench itself and the test helpers.
var library = []string{"account", "api", "api/gen", "api/product", "client", "codec", "codec/exr", "dispatch", "frame", "infer", "internal/bytemap", "internal/hugepage", "internal/kvcas", "internal/resample", "internal/retry", "internal/srgb", "internal/trunc", "job", "kernels", "kernels/cpuref", "kernels/rows", "localfile", "matte", "media", "queue", "render", "render/backdrop", "render/camfit", "render/colour", "render/plate", "render/prompt", "store", "web", "worker"}

// renderParts are render's host-side parts, below it.
var renderParts = []string{"render/backdrop", "render/camfit", "render/colour", "render/plate", "render/prompt"}

// rules is the one table of forbidden imports. A rule forbids each package
// of from to depend on each package of to, directly or through others.
// Only the packages' own (non-test) imports count: a test may wire a real
// worker behind the API, say.
var rules = []struct {
	from, to []string
	why      string
}{
	{[]string{"api", "api/gen", "api/product"}, []string{"worker", "render", "matte", "kernels", "infer"},
		"the API speaks the job contract (package job) and checks media with package media; the pipeline, the look, the network and the compute device stay out of it (its tests may still run a real worker)"},
	{[]string{"api"}, []string{"api/gen", "api/product"},
		"api is the core the two APIs are built on (routing, auth, errors, bodies, idempotency): each registers itself on an *api.Server"},
	{[]string{"api/gen"}, []string{"api/product"},
		"the generation and product APIs are siblings on the core: what they share is the core's"},
	{[]string{"api/product"}, []string{"api/gen"},
		"the generation and product APIs are siblings on the core: what they share is the core's"},
	{[]string{"dispatch"}, append([]string{"api", "api/gen", "api/product", "worker", "account", "media"}, pixel...),
		"billing and webhooks run on the job events beside the API: the APIs hand in their part (dispatch.API), so dispatch knows no route, no API's records and no pixels"},
	{[]string{"worker"}, []string{"api", "api/gen", "api/product", "account", "dispatch"},
		"the worker is below the API and never bills: both share only the job contract"},
	{[]string{"render", "matte", "kernels"}, []string{"codec"},
		"no FFmpeg in the pixel packages, so that their tests and benchmarks build into small binaries that run on a GPU machine without FFmpeg"},
	{[]string{"render", "matte", "kernels"}, []string{"infer"},
		"no ONNX Runtime in the pixel packages: the network reaches matte as an interface (matte.Objectness), wired by the worker"},
	{[]string{"kernels"}, []string{"render", "matte"},
		"kernels is the compute device, the leaf the look and the matte are built on"},
	{[]string{"kernels/cpuref"}, others("kernels/cpuref", "kernels/rows", "frame", "internal/hugepage", "internal/srgb"),
		"kernels/cpuref is the CPU backend's implementation that kernels.CPU wraps: images, their pool and the ops over row bands, on the loops of kernels/rows; it knows no other product package"},
	{[]string{"kernels/rows"}, others("kernels/rows", "frame", "internal/hugepage", "internal/srgb"),
		"kernels/rows is the CPU backend's inner loops and the tables both backends compute from: rows of pixels, no images, devices or jobs"},
	{[]string{"render"}, []string{"matte"},
		"the look takes a matte as frames; it does not make one"},
	{renderParts, []string{"render", "kernels", "matte", "codec", "infer"},
		"the look's host-side parts (the prompt parser, the backdrop painter, colour helpers, the plate measures, the camera fit) are plain Go on host slices: no compute device, no FFmpeg"},
	{[]string{"codec", "frame", "infer"}, others("codec", "codec/exr", "frame", "infer", "internal/bytemap", "internal/hugepage", "internal/resample", "internal/srgb", "internal/trunc"),
		"FFmpeg, the pixel buffer and the network session are leaves the pipeline is built from (codec uses frame)"},
	{[]string{"codec/exr"}, others("codec/exr", "frame", "internal/hugepage"),
		"codec/exr is the OpenEXR format without FFmpeg (headers, chromaticities, the sRGB encoding): pure Go below codec"},
	{[]string{"queue"}, append([]string{"api", "api/gen", "api/product", "dispatch", "worker", "account", "store", "media"}, pixel...),
		"the queue moves job records and messages and knows no pixels; it is below both the API and the worker"},
	{[]string{"store"}, []string{"queue", "job", "account", "media", "api", "dispatch", "worker"},
		"object storage knows no jobs"},
	{[]string{"account"}, append([]string{"api", "dispatch", "worker", "queue", "store", "media", "job"}, pixel...),
		"accounts, keys and billing are KV records: they know no HTTP and no job's media"},
	{[]string{"job"}, others("job", "internal/trunc"),
		"the job contract is pure Go: no cgo, no FFmpeg, no pipeline, so anything can import it"},
	{[]string{"media"}, []string{"worker", "api", "dispatch", "render", "matte", "kernels", "infer"},
		"the media checks probe with codec only; the API imports them"},
	{[]string{"internal/bytemap", "internal/hugepage", "internal/kvcas", "internal/resample", "internal/retry", "internal/srgb", "internal/trunc"}, others("internal/bytemap", "internal/hugepage", "internal/kvcas", "internal/resample", "internal/retry", "internal/srgb", "internal/trunc"),
		"hugepage, kvcas, resample, retry, srgb and trunc are leaves every package may use"},
	{[]string{"client"}, others("client", "job", "internal/retry", "internal/trunc"),
		"client is a small Go client of the HTTP API with its own wire types: it links no server, pipeline or FFmpeg code"},
	{[]string{"localfile"}, others("localfile", "codec", "codec/exr", "frame", "internal/bytemap", "internal/hugepage", "internal/srgb", "internal/trunc"),
		"localfile readies a job's local input files with codec (FFmpeg) only: no API, no pipeline, no compute device"},
	{[]string{"web"}, others("web"),
		"the web page is static files served as they are: everything it shows comes from the API in the browser"},
	{library, []string{"bench", "bench/look"},
		"bench and bench/look are fixtures and benchmarks, never imported by product code (the command may, for `vfx bench`)"},
}

// others is every product package but the ones named.
func others(but ...string) []string {
	var out []string
	for _, p := range library {
		if !slices.Contains(but, p) {
			out = append(out, p)
		}
	}
	return out
}

type listed struct {
	ImportPath    string
	Imports, Deps []string
	Error         *struct{ Err string }
}

// graph is the module's packages (named without the module prefix) with
// their direct imports and all their dependencies within the module.
type graph struct {
	imports, deps map[string][]string
}

// load lists the module's packages with `go list -deps -json`.
func load(t *testing.T) graph {
	t.Helper()
	touchSources(t)
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Imports,Deps,Error", module+"...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	g := graph{imports: map[string][]string{}, deps: map[string][]string{}}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		name, ok := strings.CutPrefix(p.ImportPath, module)
		if !ok {
			continue
		}
		if p.Error != nil {
			t.Fatalf("go list %s: %s", p.ImportPath, p.Error.Err)
		}
		g.imports[name], g.deps[name] = own(p.Imports), own(p.Deps)
	}
	return g
}

// touchSources reads every folder of the module and stats its Go files, so
// that `go test`'s cache, which tracks the files a test opens but not what a
// command it runs reads, reruns the test when an import may have changed.
func touchSources(t *testing.T) {
	t.Helper()
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	err = filepath.WalkDir(strings.TrimSpace(string(root)), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			_, err = os.Stat(path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// own keeps the module's packages of paths, without the prefix.
func own(paths []string) []string {
	var names []string
	for _, d := range paths {
		if n, ok := strings.CutPrefix(d, module); ok {
			names = append(names, n)
		}
	}
	return names
}

func TestImportRules(t *testing.T) {
	g := load(t)
	for _, r := range rules {
		for _, from := range append(slices.Clone(r.from), r.to...) {
			if _, ok := g.deps[from]; !ok {
				t.Errorf("rule names %s, which is not a package of the module", from)
			}
		}
		for _, from := range r.from {
			for _, to := range r.to {
				if slices.Contains(g.deps[from], to) {
					t.Errorf("%s must not import %s: %s; it does: %s", from, to, r.why, strings.Join(g.path(from, to), " → "))
				}
			}
		}
	}
}

// path returns the shortest import chain from -> … -> to.
func (g graph) path(from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		a := queue[0]
		queue = queue[1:]
		next := slices.Clone(g.imports[a])
		sort.Strings(next)
		for _, b := range next {
			if _, seen := prev[b]; seen {
				continue
			}
			prev[b] = a
			if b == to {
				path := []string{to}
				for p := a; p != ""; p = prev[p] {
					path = append([]string{p}, path...)
				}
				return path
			}
			queue = append(queue, b)
		}
	}
	return []string{from, "?", to}
}

// TestLibraryList keeps the list of product packages whole: a new package
// joins it (or is named here as not product code).
func TestLibraryList(t *testing.T) {
	notLibrary := []string{"api/apitest", "api/apitest/apienv", "bench", "bench/look", "cmd/vfx", "deploy", "deploy/drill", "internal/deps", "internal/modeltest", "internal/proctest", "store/storetest"}
	for name := range load(t).deps {
		if !slices.Contains(library, name) && !slices.Contains(notLibrary, name) {
			t.Errorf("package %s is in neither the product list nor the exceptions of deps_test.go", name)
		}
	}
}
