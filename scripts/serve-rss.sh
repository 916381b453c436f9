#!/usr/bin/env bash
# serve-rss.sh [BIN] [N] [BYTES]: the memory of a fresh `vfx serve` read from /proc/<pid>/status,
# (1) idle once the segmentation model is loaded and warmed (5 s and IDLE_WAIT=60 s after), and
# (2), its peak reset first (clear_refs), while N concurrent submissions
# of a BYTES-byte inline PNG (a data: URI, about 4/3 × BYTES of JSON each) are read, stored and
# rendered (sampled every 100 ms until every job has finished). Defaults: bin/vfx, 4, 49000000.
# Needs curl, jq and python3; the model from `make models` (VFX_MODEL_DIR). Loopback only.
set -euo pipefail
bin=${1:-bin/vfx}
n=${2:-4}
size=${3:-49000000}
dir=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin" serve --listen "127.0.0.1:$port" --data "$dir/data" >"$dir/out" 2>"$dir/log" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$dir"' EXIT
status() { awk -v k="$1" '$1 == k":" { printf "%.0f", $2 / 1024 }' "/proc/$pid/status"; }
for _ in $(seq 600); do grep -q '"segmentation model warm"' "$dir/log" && break; sleep 0.2; done
grep -q '"segmentation model warm"' "$dir/log" || { echo "serve-rss: the model did not warm up" >&2; tail -5 "$dir/log" >&2; exit 1; }
key=$(sed -n 's/^api key (shown once): //p' "$dir/out")
sleep 5
echo "idle 5 s after the model's warm-up: VmRSS $(status VmRSS) MiB, VmHWM $(status VmHWM) MiB (the warm-up run's peak)"
sleep "${IDLE_WAIT:-60}"
echo "idle $((5 + ${IDLE_WAIT:-60})) s after the warm-up: VmRSS $(status VmRSS) MiB"
# Reset the peak (VmHWM) so that the next one is the submissions' own.
echo 5 >"/proc/$pid/clear_refs"

# A valid PNG (64x48) padded to exactly $size bytes with a private ancillary chunk.
python3 - "$size" "$dir/body" <<'EOF'
import base64, json, struct, sys, zlib
size, out = int(sys.argv[1]), sys.argv[2]
def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
w, h = 64, 48
raw = b"".join(b"\0" + b"".join(bytes((x * 4 % 256, y * 5 % 256, 128)) for x in range(w)) for y in range(h))
head = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(raw))
tail = chunk(b"IEND", b"")
pad = size - len(head) - len(tail) - 12
png = head + chunk(b"vfXp", b"\0" * pad) + tail
assert len(png) == size
src = "data:image/png;base64," + base64.b64encode(png).decode()
with open(out, "w") as f:
    json.dump({"generation_type": "image", "alpha_mode": "fill", "prompt": "warm key light", "source_uri": src}, f)
EOF
peak=0
sample() { local r; r=$(status VmRSS); [ "${r:-0}" -gt "$peak" ] && peak=$r; true; }
for i in $(seq "$n"); do
  curl -sS -o "$dir/resp$i" -w '%{http_code}\n' -X POST "http://127.0.0.1:$port/v1/vfx/generations" \
    -H "x-api-key: $key" -H 'Content-Type: application/json' --data-binary @"$dir/body" >"$dir/code$i" &
done
while [ "$(jobs -rp | grep -vc "^$pid\$")" -gt 0 ]; do sample; sleep 0.1; done
codes=$(cat "$dir"/code* | sort | uniq -c | awk '{printf "%s×%s ", $1, $2}')
for i in $(seq "$n"); do
  id=$(jq -r '.id // empty' "$dir/resp$i")
  [ -n "$id" ] || continue
  for _ in $(seq 1200); do
    sample
    st=$(curl -sS "http://127.0.0.1:$port/v1/vfx/generations/$id" -H "x-api-key: $key" | jq -r .status)
    [ "$st" = completed ] || [ "$st" = failed ] && break
    sleep 0.1
  done
done
sample
echo "$n × $size-byte inline submissions (answers: $codes), read, stored and rendered: peak VmHWM $(status VmHWM) MiB (sampled VmRSS peak $peak MiB); after: VmRSS $(status VmRSS) MiB"
