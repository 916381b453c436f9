# vfx: build, test, demo and benchmarks. Every target installs what it needs
# on a fresh Debian 12 machine (see `deps`).
SHELL := /bin/bash
GO ?= go
BIN := bin
FFMPEG_PKGS := libavcodec-dev libavformat-dev libavfilter-dev libswscale-dev \
	libavutil-dev libavdevice-dev libswresample-dev pkg-config ffmpeg
TEST_TIMEOUT ?= 12m

.PHONY: all deps build test test-short bench bench-ffmpeg demo lint fmt vet clean

all: build

## deps: install FFmpeg dev packages, the ffmpeg CLI (tests and bench-ffmpeg) and pkg-config when missing.
deps:
	@missing=""; for p in $(FFMPEG_PKGS); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "deps: installing$$missing"; \
		SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	else echo "deps: FFmpeg dev packages present"; fi

## build: the vfx binary (CPU backend).
build: deps
	$(GO) build -o $(BIN)/vfx ./cmd/vfx

## test: every test, with real FFmpeg.
test: deps minio
	$(GO) vet ./...
	VFX_MINIO_BIN=$(MINIO_BIN) VFX_REQUIRE_MINIO=1 $(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...

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
	$(GO) test -run=NONE -bench=. -timeout 30m ./...

## bench-ffmpeg: side by side, the ffmpeg command line vs `vfx render` on a 240-frame 1080p custom-matte job.
bench-ffmpeg: build
	$(BIN)/vfx bench ffmpeg --out out/bench --frames 240 --width 1920 --height 1080

## demo: start `vfx serve` on a temporary data folder and a free loopback port, generate sample media,
## upload it and run a video job and an image job over HTTP with `vfx submit`, download render/source/alpha
## into ./out/demo (and ./out/demo/image), print the paths and the time, stop the server (scripts/demo.sh).
demo: build
	bash scripts/demo.sh $(BIN)/vfx

## lint: gofmt and go vet.
lint: fmt vet
fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
vet: deps
	$(GO) vet ./...

clean:
	rm -rf $(BIN) out

## bench-matte: the matte quality suite (select and auto, synthetic sequences with exact mattes,
## 854x480): J, F, J decay, flicker and matte frames/s per case.
.PHONY: bench-matte
bench-matte: deps
	$(GO) test -run=NONE -bench='BenchmarkMatte' -benchtime=1x -timeout 30m ./bench/
