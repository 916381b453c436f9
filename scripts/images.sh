#!/usr/bin/env bash
# images.sh: build the vfx container images without a Docker engine or a
# registry, with Debian's buildah (vfs storage, chroot isolation; run as
# root), on a Debian bookworm base made here with debootstrap from the
# Debian mirror this machine's apt configuration names. `make images` and
# `make image-test` call it.
#
#   scripts/images.sh tools             install buildah, debootstrap and podman when missing
#   scripts/images.sh base              make the base image $BASE_IMAGE (once; kept in buildah's storage)
#   scripts/images.sh models DIR        copy ONNX Runtime, the IS-Net weights and their licence texts
#                                       from DIR (`make models`) into $IMAGES_CACHE/models, the
#                                       folder the images bundle (MODELS_DIR) as /opt/vfx/models
#   scripts/images.sh build cpu|gpu BIN build deploy/docker/Dockerfile[.gpu] on $BASE_IMAGE with the
#                                       host-built binary BIN (BINARY_FROM=prebuilt) and the models
#   scripts/images.sh test              run the checks of scripts/image-check.sh in the CPU image
#   scripts/images.sh test-gpu          check that the GPU image explains a missing GPU
#
# Environment: IMAGE, IMAGE_GPU, IMAGE_TAG (the names `make images` gives),
# BASE_IMAGE (default localhost/vfx-base:bookworm), IMAGES_CACHE (work folder,
# default out/images), BUILDAH_FLAGS (default --storage-driver vfs).
set -euo pipefail

IMAGE=${IMAGE:-ghcr.io/vfxrender/vfx}
IMAGE_GPU=${IMAGE_GPU:-ghcr.io/vfxrender/vfx-gpu}
IMAGE_TAG=${IMAGE_TAG:-dev}
BASE_IMAGE=${BASE_IMAGE:-localhost/vfx-base:bookworm}
IMAGES_CACHE=${IMAGES_CACHE:-out/images}
read -r -a BUILDAH <<<"buildah ${BUILDAH_FLAGS:---storage-driver vfs}"
SUITE=bookworm

die() { echo "images: $*" >&2; exit 1; }
need_root() { [[ $(id -u) == 0 ]] || die "buildah with chroot isolation and debootstrap run as root here (sudo make $1)"; }

# apt_uri SUITE: the first Debian archive URI in this machine's apt
# configuration that serves SUITE with the main component (deb822 .sources
# files first, then one-line .list files).
apt_uri() {
	local suite=$1 f uri
	for f in /etc/apt/sources.list.d/*.sources; do
		[[ -r $f ]] || continue
		uri=$(awk -v suite="$suite" 'BEGIN { RS = "" }
			{
				uri = ""; s = 0; c = 0; deb = 0
				n = split($0, L, "\n")
				for (i = 1; i <= n; i++) {
					if (L[i] ~ /^Types:/ && L[i] ~ /[ \t]deb([ \t]|$)/) deb = 1
					if (L[i] ~ /^URIs:/) { split(L[i], u, /[ \t]+/); uri = u[2] }
					if (L[i] ~ /^Suites:/ && L[i] ~ ("[ \t]" suite "([ \t]|$)")) s = 1
					if (L[i] ~ /^Components:/ && L[i] ~ /[ \t]main([ \t]|$)/) c = 1
				}
				if (deb && s && c && uri != "") { print uri; exit }
			}' "$f")
		[[ -n $uri ]] && { echo "$uri"; return 0; }
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[[ -r $f ]] || continue
		uri=$(awk -v suite="$suite" '$1 == "deb" {
				i = 2; if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
				if ($(i + 1) == suite) { for (j = i + 2; j <= NF; j++) if ($j == "main") { print $i; exit } }
			}' "$f")
		[[ -n $uri ]] && { echo "$uri"; return 0; }
	done
	return 1
}

cmd_tools() {
	local missing=() p
	for p in buildah debootstrap podman; do
		command -v "$p" >/dev/null || missing+=("$p")
	done
	if ((${#missing[@]})); then
		need_root images
		echo "images: installing ${missing[*]}"
		apt-get -o DPkg::Lock::Timeout=600 update -qq
		DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
			"${missing[@]}" uidmap >/dev/null
	fi
	echo "images: $(buildah --version), $(podman --version), debootstrap $(dpkg-query -W -f='${Version}' debootstrap)"
}

image_exists() { "${BUILDAH[@]}" inspect --type image "$1" >/dev/null 2>&1; }

# cmd_base: debootstrap --variant=minbase into a folder, apt sources for
# the suite, its updates and security (from this machine's apt
# configuration), apt's caches emptied, imported as $BASE_IMAGE.
cmd_base() {
	need_root images
	if image_exists "$BASE_IMAGE"; then
		echo "images: base $BASE_IMAGE present ($("${BUILDAH[@]}" inspect --type image --format '{{.FromImageID}}' "$BASE_IMAGE" | cut -c1-12))"
		return
	fi
	local mirror security root t0 ctr
	mirror=$(apt_uri "$SUITE") || die "no apt source for $SUITE main in /etc/apt: cannot pick a Debian mirror"
	security=$(apt_uri "$SUITE-security" || true)
	root="$IMAGES_CACHE/rootfs"
	mkdir -p "$IMAGES_CACHE"
	rm -rf "$root"
	t0=$SECONDS
	echo "images: debootstrap --variant=minbase $SUITE from this machine's apt mirror"
	debootstrap --variant=minbase "$SUITE" "$root" "$mirror" >"$IMAGES_CACHE/debootstrap.log" 2>&1 ||
		{ tail -n 20 "$IMAGES_CACHE/debootstrap.log" >&2; die "debootstrap failed (log: $IMAGES_CACHE/debootstrap.log)"; }
	rm -f "$root/etc/apt/sources.list"
	{
		printf 'Types: deb\nURIs: %s\nSuites: %s %s-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$mirror" "$SUITE" "$SUITE"
		[[ -n $security ]] && printf '\nTypes: deb\nURIs: %s\nSuites: %s-security\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$security" "$SUITE"
	} >"$root/etc/apt/sources.list.d/debian.sources"
	rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/var/log/*.log "$root"/tmp/*
	echo "images: debootstrap done in $((SECONDS - t0)) s ($(du -sh "$root" | cut -f1))"
	ctr=$("${BUILDAH[@]}" from scratch)
	tar -C "$root" --numeric-owner -cf "$IMAGES_CACHE/rootfs.tar" .
	"${BUILDAH[@]}" add "$ctr" "$IMAGES_CACHE/rootfs.tar" / >/dev/null
	"${BUILDAH[@]}" config --cmd /bin/bash --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		--label org.opencontainers.image.description="Debian $SUITE minbase (debootstrap), vfx build base" "$ctr"
	"${BUILDAH[@]}" commit -q --rm "$ctr" "$BASE_IMAGE" >/dev/null
	rm -rf "$root" "$IMAGES_CACHE/rootfs.tar"
	echo "images: base $BASE_IMAGE made in $((SECONDS - t0)) s"
}

# MODEL_FILES: what the images bundle from the model folder (scripts/models.sh
# installs exactly these).
MODEL_FILES=(libonnxruntime.so.1 isnet-imgly-fp16.onnx LICENSE-onnxruntime.txt LICENSE-isnet-imgly-AGPL-3.0.md)

# cmd_models DIR: the model files into $IMAGES_CACHE/models, a folder of the
# build context (.dockerignore excludes out/ but lets out/images/models in).
# Never committed: out/ is git-ignored.
cmd_models() {
	local src=${1:?model folder (make models)} dst="$IMAGES_CACHE/models" f
	for f in "${MODEL_FILES[@]}"; do
		[[ -f $src/$f ]] || die "models: $src/$f missing (make models)"
	done
	rm -rf "$dst" && mkdir -p "$dst"
	for f in "${MODEL_FILES[@]}"; do cp "$src/$f" "$dst/$f"; done
	cp deploy/docker/models/README.md "$dst/README.md"
	echo "images: models for /opt/vfx/models in $dst ($(du -sh "$dst" | cut -f1)): ${MODEL_FILES[*]}"
}

# cmd_build cpu|gpu BIN: the Dockerfile on $BASE_IMAGE, the binary from
# the build context vfx-bin (a folder holding only it).
cmd_build() {
	need_root images
	local kind=${1:?cpu or gpu} bin=${2:?host-built binary} file name ctxdir t0
	case $kind in
	cpu) file=deploy/docker/Dockerfile name=$IMAGE:$IMAGE_TAG ;;
	gpu) file=deploy/docker/Dockerfile.gpu name=$IMAGE_GPU:$IMAGE_TAG ;;
	*) die "build: $kind: want cpu or gpu" ;;
	esac
	[[ -x $bin ]] || die "build: $bin: no such binary"
	[[ -f $IMAGES_CACHE/models/isnet-imgly-fp16.onnx ]] || die "build: no models in $IMAGES_CACHE/models (scripts/images.sh models DIR)"
	image_exists "$BASE_IMAGE" || die "build: base $BASE_IMAGE missing (scripts/images.sh base)"
	ctxdir="$IMAGES_CACHE/bin-$kind"
	rm -rf "$ctxdir" && mkdir -p "$ctxdir"
	cp "$bin" "$ctxdir/$(basename "$bin")"
	t0=$SECONDS
	"${BUILDAH[@]}" bud --isolation chroot --layers=false --format docker -f "$file" \
		--build-arg BINARY_FROM=prebuilt --build-context "vfx-bin=$ctxdir" \
		--build-arg RUNTIME_IMAGE="$BASE_IMAGE" --build-arg BUILD_IMAGE="$BASE_IMAGE" \
		--build-arg MODELS_DIR="$IMAGES_CACHE/models" \
		--build-arg VERSION="$IMAGE_TAG" -t "$name" . >"$IMAGES_CACHE/build-$kind.log" 2>&1 ||
		{ tail -n 30 "$IMAGES_CACHE/build-$kind.log" >&2; die "build $kind failed (log: $IMAGES_CACHE/build-$kind.log)"; }
	# The manifests deploy :latest.
	[[ $IMAGE_TAG == latest ]] || "${BUILDAH[@]}" tag "$name" "${name%:*}:latest"
	# buildah 1.28 leaves the working container of the empty binary stage
	# (FROM ${BINARY_FROM}) and the prebuilt stage's untagged image behind;
	# drop working containers of untagged images, then those images.
	"${BUILDAH[@]}" containers --format '{{.ContainerID}} {{.ImageName}}' | awk 'NF == 1 { print $1 }' |
		while read -r c; do "${BUILDAH[@]}" rm "$c" >/dev/null || true; done
	"${BUILDAH[@]}" rmi --prune >/dev/null 2>&1 || true
	echo "images: $name (and :latest) built in $((SECONDS - t0)) s; $(image_size "$name")"
}

# image_size NAME: the image's size as buildah reports it (its layers,
# uncompressed).
image_size() {
	echo "size $("${BUILDAH[@]}" images --format '{{.Size}}' "$1" | head -n 1) uncompressed"
}

# cmd_test: scripts/image-check.sh inside a container of the CPU image,
# as the image's user, with `buildah run --isolation chroot`. (`podman run`
# fails on this machine: crun cannot set RLIMIT_NPROC without
# CAP_SYS_RESOURCE, which root lacks in this sandbox. Chroot isolation makes
# no new namespaces: the container shares the host's network, so loopback is
# the host's, and its /dev.)
cmd_test() {
	need_root image-test
	local name=$IMAGE:$IMAGE_TAG ctr rc=0
	image_exists "$name" || die "test: $name missing (make images)"
	ctr=$("${BUILDAH[@]}" from -q "$name")
	"${BUILDAH[@]}" run --isolation chroot --user 10001:10001 -v "$PWD/scripts/image-check.sh:/check.sh:ro" \
		"$ctr" -- /bin/sh /check.sh || rc=$?
	"${BUILDAH[@]}" rm "$ctr" >/dev/null
	echo "images: $(image_size "$name")"
	return $rc
}

# cmd_test_gpu: without a GPU the GPU image's vfx exits with a clear
# message and status 69, not a crash.
cmd_test_gpu() {
	need_root image-test
	local name=$IMAGE_GPU:$IMAGE_TAG ctr out rc=0
	image_exists "$name" || die "test-gpu: $name missing (make images)"
	ctr=$("${BUILDAH[@]}" from -q "$name")
	out=$("${BUILDAH[@]}" run --isolation chroot --user 10001:10001 "$ctr" -- /usr/local/bin/vfx selftest 2>&1) || rc=$?
	"${BUILDAH[@]}" rm "$ctr" >/dev/null
	echo "check gpu-no-gpu: vfx selftest exit $rc: $out"
	[[ $rc == 69 && $out == *"no NVIDIA GPU"* ]] || die "test-gpu: want exit 69 and a message naming the missing GPU"
	echo "images: $(image_size "$name")"
}

case ${1:-} in
tools) cmd_tools ;;
base) cmd_base ;;
models) shift; cmd_models "$@" ;;
build) shift; cmd_build "$@" ;;
test) cmd_test ;;
test-gpu) cmd_test_gpu ;;
*) die "usage: scripts/images.sh tools|base|models DIR|build cpu|gpu BIN|test|test-gpu" ;;
esac
