package deploy

// The images are built and run by `make images` and `make image-test`
// (buildah, scripts/images.sh), outside `make test`. This test checks what
// can be checked without building: each Dockerfile is multi-stage, its
// base images are build arguments defaulting to the public images, the
// binary comes from the build stage by default or from the vfx-bin build
// context (BINARY_FROM=prebuilt, what make images uses), its runtime stage
// runs as a non-root user and has a HEALTHCHECK, the files it COPYs from
// the build context exist and are not excluded by .dockerignore, the
// package it builds exists, /usr/local/bin/vfx (the ENTRYPOINT) is the
// binary or a script that execs it, the vfx commands and endpoints it
// calls exist, its VFX_* variables are ones vfx reads, no Debian mirror
// host is written into it, and the FFmpeg runtime packages it installs are
// the library versions the build links (those pkg-config reports on this
// Debian bookworm machine).

import (
	"bufio"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// instr is one Dockerfile instruction (continuation lines joined).
type instr struct {
	cmd, args string
	stage     int // index of the FROM it belongs to
}

func parseDockerfile(t *testing.T, path string) []instr {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []instr
	var cur strings.Builder
	stage := -1
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		trim := strings.TrimSpace(line)
		if cur.Len() == 0 && (trim == "" || strings.HasPrefix(trim, "#")) {
			continue
		}
		if strings.HasSuffix(trim, "\\") {
			cur.WriteString(strings.TrimSuffix(trim, "\\") + " ")
			continue
		}
		cur.WriteString(trim)
		full := cur.String()
		cur.Reset()
		cmd, args, _ := strings.Cut(full, " ")
		cmd = strings.ToUpper(cmd)
		if cmd == "FROM" {
			stage++
		}
		out = append(out, instr{cmd: cmd, args: strings.TrimSpace(args), stage: stage})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// mainCommands returns the subcommands cmd/vfx/main.go dispatches.
func mainCommands(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "cmd", "vfx", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`case "([a-z-]+)"`).FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = true
	}
	return out
}

func TestDockerfiles(t *testing.T) {
	envNames := vfxEnvNames(t)
	commands := mainCommands(t)
	ignore, err := os.ReadFile(filepath.Join("..", ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	workerSrc, err := os.ReadFile(filepath.Join("..", "cmd", "vfx", "worker.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Dockerfile", "Dockerfile.gpu"} {
		t.Run(name, func(t *testing.T) {
			ins := parseDockerfile(t, filepath.Join("docker", name))
			stages := map[string]int{}
			last := -1
			for _, in := range ins {
				if in.cmd == "FROM" {
					f := strings.Fields(in.args)
					if len(f) == 3 && strings.EqualFold(f[1], "AS") {
						stages[f[2]] = in.stage
					}
					last = in.stage
				}
			}
			if last < 1 {
				t.Fatalf("%d stages: want a multi-stage build", last+1)
			}
			raw, err := os.ReadFile(filepath.Join("docker", name))
			if err != nil {
				t.Fatal(err)
			}
			checkBuildArgs(t, ins, stages, string(raw))
			args := argDefaults(ins)
			var user, health, entry string
			var copiedTo, copiedFrom []string
			for _, in := range ins {
				switch in.cmd {
				case "COPY":
					f := strings.Fields(in.args)
					var from string
					var srcs []string
					for _, a := range f[:len(f)-1] {
						if v, ok := strings.CutPrefix(a, "--from="); ok {
							from = v
						} else if !strings.HasPrefix(a, "--") {
							srcs = append(srcs, a)
						}
					}
					if from != "" {
						_, isStage := stages[from]
						// A named build context (--build-context NAME=DIR) is
						// allowed in the prebuilt stage only.
						if !isStage && !(from == "vfx-bin" && in.stage == stages["prebuilt"]) {
							t.Errorf("COPY --from=%s: no such stage (a named build context only in the prebuilt stage)", from)
						}
						if in.stage == last {
							copiedTo = append(copiedTo, f[len(f)-1])
							copiedFrom = append(copiedFrom, "--from="+from)
						}
						continue
					}
					for _, s := range srcs {
						s = os.Expand(s, func(k string) string { return args[k] })
						if in.stage == last {
							copiedTo = append(copiedTo, f[len(f)-1])
							copiedFrom = append(copiedFrom, s)
						}
						if _, err := os.Stat(filepath.Join("..", s)); err != nil {
							t.Errorf("COPY %s: %v", s, err)
						}
						if s != "." && slices.Contains(strings.Fields(string(ignore)), s) {
							t.Errorf("COPY %s: excluded by .dockerignore", s)
						}
					}
				case "RUN":
					for _, m := range regexp.MustCompile(`go build .* (\./\S+)\s*$`).FindAllStringSubmatch(in.args, -1) {
						if _, err := os.Stat(filepath.Join("..", m[1])); err != nil {
							t.Errorf("go build %s: %v", m[1], err)
						}
					}
					if in.stage == last {
						checkFFmpegPackages(t, in.args)
					}
				case "USER":
					if in.stage == last {
						user = in.args
					}
				case "HEALTHCHECK":
					if in.stage == last {
						health = in.args
					}
				case "ENTRYPOINT":
					if in.stage == last {
						entry = in.args
					}
				case "ENV":
					for _, m := range regexp.MustCompile(`\b(VFX_[A-Z0-9_]+)=`).FindAllStringSubmatch(in.args, -1) {
						if !envNames[m[1]] {
							t.Errorf("ENV %s: vfx does not read it", m[1])
						}
					}
				}
			}
			if u := strings.Split(user, ":")[0]; u == "" || u == "0" || u == "root" {
				t.Errorf("runtime USER %q: want a non-root user", user)
			}
			if !strings.Contains(health, "CMD") || !strings.Contains(health, "vfx probe") {
				t.Errorf("HEALTHCHECK %q: want CMD … vfx probe …", health)
			}
			if !commands["probe"] || !commands["worker"] || !commands["api"] {
				t.Errorf("vfx lacks a command the images use (probe, worker, api): %v", commands)
			}
			for _, path := range regexp.MustCompile(`/[a-z]+z\b`).FindAllString(health, -1) {
				if !strings.Contains(string(workerSrc), `"GET `+path+`"`) {
					t.Errorf("HEALTHCHECK calls %s, which the worker does not serve", path)
				}
			}
			if !strings.Contains(entry, "/usr/local/bin/vfx") || !slices.Contains(copiedTo, "/usr/local/bin/vfx") {
				t.Errorf("ENTRYPOINT %s, files copied to %v: want /usr/local/bin/vfx for both", entry, copiedTo)
			}
			// /usr/local/bin/vfx from the build context is a wrapper: it must
			// exec the binary copied from the binary stage.
			if i := slices.Index(copiedTo, "/usr/local/bin/vfx"); i >= 0 && i < len(copiedFrom) {
				checkWrapper(t, copiedFrom[i], copiedTo)
			}
			// The segmentation model: MODELS_DIR lands in /opt/vfx/models,
			// which the runtime stage names in VFX_MODEL_DIR (workers and
			// vfx serve refuse to start without the model), and the folder
			// make images bundles is let into the context.
			if !slices.Contains(copiedTo, "/opt/vfx/models/") || !regexp.MustCompile(`(?m)^\s*(ENV\s+)?VFX_MODEL_DIR=/opt/vfx/models\b`).MatchString(string(raw)) {
				t.Errorf("want MODELS_DIR copied to /opt/vfx/models/ and ENV VFX_MODEL_DIR=/opt/vfx/models (copied to %v)", copiedTo)
			}
			if !slices.Contains(strings.Fields(string(ignore)), "!out/images/models") {
				t.Errorf(".dockerignore: want !out/images/models (make images' MODELS_DIR)")
			}
		})
	}
}

// argDefaults returns the default of every ARG (the last one wins; a
// later ARG NAME without a value keeps the earlier default).
func argDefaults(ins []instr) map[string]string {
	out := map[string]string{}
	for _, in := range ins {
		if in.cmd != "ARG" {
			continue
		}
		k, v, ok := strings.Cut(in.args, "=")
		if ok || out[k] == "" {
			out[k] = os.Expand(v, func(n string) string { return out[n] })
		}
	}
	return out
}

// checkBuildArgs: the base images are the build arguments BUILD_IMAGE and
// RUNTIME_IMAGE with the public images as defaults, BINARY_FROM picks the
// build stage by default or the prebuilt one, the final stage takes the
// binary from the stage BINARY_FROM names, and no Debian mirror host is
// written into the file (apt sources come from the base image).
func checkBuildArgs(t *testing.T, ins []instr, stages map[string]int, raw string) {
	t.Helper()
	args := argDefaults(ins)
	if !strings.HasPrefix(args["BUILD_IMAGE"], "golang:") || !strings.HasSuffix(args["BUILD_IMAGE"], "-bookworm") {
		t.Errorf("ARG BUILD_IMAGE=%q: want golang:<version>-bookworm by default", args["BUILD_IMAGE"])
	}
	if args["RUNTIME_IMAGE"] != "debian:bookworm-slim" {
		t.Errorf("ARG RUNTIME_IMAGE=%q: want debian:bookworm-slim by default", args["RUNTIME_IMAGE"])
	}
	if args["BINARY_FROM"] != "build" {
		t.Errorf("ARG BINARY_FROM=%q: want build by default", args["BINARY_FROM"])
	}
	for _, st := range []string{"build", "prebuilt", "binary"} {
		if _, ok := stages[st]; !ok {
			t.Errorf("no stage %q", st)
		}
	}
	froms := map[string]string{} // stage name → what its FROM names
	for _, in := range ins {
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			if len(f) == 3 {
				froms[f[2]] = f[0]
			}
		}
	}
	for st, want := range map[string]string{"build": "${BUILD_IMAGE}", "binary": "${BINARY_FROM}", "runtime": "${RUNTIME_IMAGE}"} {
		if froms[st] != want {
			t.Errorf("stage %s is FROM %q, want FROM %s", st, froms[st], want)
		}
	}
	if stages["runtime"] != slices.Max(slices.Collect(maps.Values(stages))) {
		t.Errorf("the last stage is not the runtime stage: %v", stages)
	}
	if m := regexp.MustCompile(`(?i)https?://[a-z0-9.-]*debian[a-z0-9.-]*`).FindString(raw); m != "" {
		t.Errorf("names the mirror %s: apt sources come from the base image (deploy/docker/apt-nonfree.sh)", m)
	}
}

// checkWrapper: a script installed as /usr/local/bin/vfx execs a binary
// the final stage copies from the binary stage.
func checkWrapper(t *testing.T, src string, copiedTo []string) {
	t.Helper()
	if strings.HasPrefix(src, "--from=") {
		return // the binary itself
	}
	b, err := os.ReadFile(filepath.Join("..", src))
	if err != nil {
		t.Errorf("wrapper %s: %v", src, err)
		return
	}
	m := regexp.MustCompile(`(?m)^bin=(\S+)$`).FindStringSubmatch(string(b))
	if m == nil || !strings.Contains(string(b), `exec "$bin" "$@"`) {
		t.Errorf("wrapper %s: want bin=<path> and exec \"$bin\" \"$@\"", src)
		return
	}
	if !slices.Contains(copiedTo, m[1]) {
		t.Errorf("wrapper %s execs %s, which the image does not install (copied: %v)", src, m[1], copiedTo)
	}
}

// checkFFmpegPackages: the runtime stage installs libavcodecNN etc. with
// the major versions of the libraries the build links.
func checkFFmpegPackages(t *testing.T, run string) {
	if !strings.Contains(run, "libavcodec") {
		return
	}
	if _, err := exec.LookPath("pkg-config"); err != nil {
		t.Log("pkg-config missing: runtime FFmpeg package versions not checked")
		return
	}
	for lib, pkg := range map[string]string{"libavcodec": "libavcodec", "libavformat": "libavformat", "libavfilter": "libavfilter",
		"libswscale": "libswscale", "libavutil": "libavutil", "libavdevice": "libavdevice", "libswresample": "libswresample"} {
		out, err := exec.Command("pkg-config", "--modversion", lib).Output()
		if err != nil {
			t.Errorf("pkg-config %s: %v (make deps installs it)", lib, err)
			continue
		}
		major, _, _ := strings.Cut(strings.TrimSpace(string(out)), ".")
		if want := pkg + major; !regexp.MustCompile(`\b` + want + `\b`).MatchString(run) {
			t.Errorf("runtime stage does not install %s (the build links %s %s)", want, lib, strings.TrimSpace(string(out)))
		}
	}
}

// TestProbeCommandsExist: the exec probes of the manifests name vfx
// commands that exist.
func TestProbeCommandsExist(t *testing.T) {
	commands := mainCommands(t)
	for _, dir := range []string{"k8s/base", "k8s/overlays/gpu"} {
		o := render(t, dir)
		for _, d := range o.deployments {
			for _, c := range d.Spec.Template.Spec.Containers {
				if p := c.StartupProbe; p != nil && p.Exec != nil {
					cmd := p.Exec.Command
					if len(cmd) < 2 || cmd[0] != "vfx" {
						t.Errorf("%s: startup probe %v: want a vfx command", d.Name, cmd)
						continue
					}
					if !commands[cmd[1]] {
						t.Errorf("%s: startup probe runs vfx %s, which does not exist", d.Name, cmd[1])
					}
				}
			}
		}
	}
}
