#!/usr/bin/env bash
# demo.sh: the end-to-end demo behind `make demo`. It starts `vfx serve` on
# a temporary data folder and a free loopback port, writes sample media
# (1280x720, 48 frames), uploads it and runs a video job (custom matte,
# reference image, prompt) and an image job over HTTP with `vfx submit`,
# downloads render/source/alpha into ./out/demo (and ./out/demo/image),
# and stops the server, whatever happens.
#
# usage: scripts/demo.sh [path to vfx binary]   (default bin/vfx)
set -euo pipefail

VFX=${1:-bin/vfx}
OUT=out/demo
start=$(date +%s.%N)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vfx-demo.XXXXXX")
pid=""

cleanup() {
	local rc=$?
	if [[ $rc -ne 0 && -f $tmp/serve.log ]]; then
		echo "demo: failed (exit $rc); last lines of the server log:" >&2
		tail -n 15 "$tmp/serve.log" >&2 || true
	fi
	if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null || true
		# Bounded wait for a clean stop (30 s), then force.
		for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
		if kill -0 "$pid" 2>/dev/null; then
			echo "demo: server did not stop in 30 s; killing it" >&2
			kill -KILL "$pid" 2>/dev/null || true
		fi
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Create the output files first: the background shell opens them only when it
# runs, and the first read below may come before that.
: >"$tmp/serve.out"
: >"$tmp/serve.log"
"$VFX" serve --listen 127.0.0.1:0 --data "$tmp/data" >"$tmp/serve.out" 2>"$tmp/serve.log" &
pid=$!

# Wait (at most 30 s) for the address line; the key line comes with it (one write).
url=""
for _ in $(seq 1 150); do
	url=$(sed -n 's/^vfx serve listening on \(http:\/\/[^ ]*\)$/\1/p' "$tmp/serve.out")
	[[ -n $url ]] && break
	kill -0 "$pid" 2>/dev/null || { echo "demo: vfx serve exited early" >&2; exit 1; }
	sleep 0.2
done
[[ -n $url ]] || { echo "demo: vfx serve not ready after 30 s" >&2; exit 1; }
key=$(sed -n 's/^api key (shown once): \(.*\)$/\1/p' "$tmp/serve.out")
acct=$(sed -n 's/^development account \([^ ]*\) .*$/\1/p' "$tmp/serve.out")
[[ -n $key && -n $acct ]] || { echo "demo: no development key printed" >&2; cat "$tmp/serve.out" >&2; exit 1; }
export VFX_API_URL=$url VFX_API_KEY=$key
# The development key is organisation-kind: no rate limits, no waits.
echo "demo: vfx serve at $url, development account $acct"

rm -rf "$OUT"
"$VFX" bench fixture --out "$OUT/input" --width 1280 --height 720 --frames 48 >/dev/null
echo "demo: sample media in $OUT/input"

echo "demo: video job (custom matte, reference image, prompt)"
"$VFX" submit --type video --source "$OUT/input/source.mp4" \
	--alpha-mode custom --alpha "$OUT/input/matte.mp4" \
	--reference "$OUT/input/reference.png" \
	--prompt "warm golden hour key light from the left, soft blue rim light from behind" \
	--seed 7 --max-resolution 720 --out "$OUT"

echo "demo: image job (custom matte, prompt)"
"$VFX" submit --type image --source "$OUT/input/still.png" \
	--alpha-mode custom --alpha "$OUT/input/still_matte.png" \
	--prompt "moody night city, neon magenta and teal, hard rim light" \
	--seed 7 --out "$OUT/image"

ls -l "$OUT"/render.* "$OUT"/source.* "$OUT"/alpha.* "$OUT"/image/*
end=$(date +%s.%N)
awk -v s="$start" -v e="$end" 'BEGIN { printf "demo: done in %.1f s (server start, sample media, uploads, two jobs, downloads)\n", e - s }'
