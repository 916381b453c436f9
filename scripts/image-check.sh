#!/bin/sh
# image-check.sh: the checks `make image-test` runs inside a container of
# the CPU image (scripts/images.sh test mounts it at /check.sh and runs it
# as the image's user). POSIX sh: the image has dash, coreutils, findutils,
# grep and sed, and no curl, so HTTP goes through `vfx probe` and `vfx submit`.
# Every check prints "check <name>: ok|FAIL ..."; the exit status is the
# number of failed checks (0: all passed).
set -u
fails=0
ok() { echo "check $1: ok - $2"; }
fail() { echo "check $1: FAIL - $2"; fails=$((fails + 1)); }
work=/scratch/image-check
rm -rf "$work" && mkdir -p "$work" || { echo "check setup: FAIL - cannot write $work"; exit 1; }

# 1. The user: not root.
uid=$(id -u)
if [ "$uid" != 0 ]; then ok user "$(id)"; else fail user "runs as root: $(id)"; fi

# 2. Write access: only /scratch (and below) is writable by this user
# (/proc, /sys and /dev are the runtime's, not the image's).
writable=$(find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /scratch \) -prune -o -writable -print 2>/dev/null)
[ -w /scratch ] || fail write "/scratch is not writable"
for d in / /usr/local/bin /etc /opt/vfx/models /tmp /var/tmp; do
	if (: >"$d/.vfx-write-test") 2>/dev/null; then
		rm -f "$d/.vfx-write-test"
		writable="$writable
$d (created a file)"
	fi
done
writable=$(printf '%s\n' "$writable" | sed '/^$/d' | sort -u)
if [ -z "$writable" ] && [ -w /scratch ]; then
	ok write "writable outside /proc, /sys, /dev: /scratch only; TMPDIR=${TMPDIR:-unset}"
else
	fail write "writable outside /scratch: $(echo "$writable" | tr '\n' ' ')"
fi

# 3. Version, the bundled model, FFmpeg libraries (the packages and what the binary loads).
ok version "$(vfx version | tr '\n' ';')"
# The segmentation model and ONNX Runtime (workers and vfx serve refuse to
# start without them): bundled in /opt/vfx/models, which VFX_MODEL_DIR names.
ver=$(vfx version 2>&1)
if [ "${VFX_MODEL_DIR:-}" = /opt/vfx/models ] &&
	echo "$ver" | grep -q '^segmentation model: .*: installed (/opt/vfx/models/' &&
	echo "$ver" | grep -q '^onnx runtime: /opt/vfx/models/libonnxruntime.so.1, licence MIT: installed$' &&
	[ -s /opt/vfx/models/LICENSE-onnxruntime.txt ] && [ -s /opt/vfx/models/LICENSE-isnet-imgly-AGPL-3.0.md ]; then
	ok models "VFX_MODEL_DIR=$VFX_MODEL_DIR; $(ls /opt/vfx/models | tr '\n' ' ')"
else
	fail models "VFX_MODEL_DIR=${VFX_MODEL_DIR:-unset}; $(echo "$ver" | grep -E '^(segmentation model|onnx runtime):' | tr '\n' ';') $(ls /opt/vfx/models 2>&1 | tr '\n' ' ')"
fi
pkgs=$(dpkg-query -W -f='${Package} ${Version}\n' libavcodec59 libavformat59 libavfilter8 libavutil57 libswscale6 libswresample4 libavdevice59 2>&1 | tr '\n' ';')
loaded=$(ldd /usr/local/bin/vfx | sed -n 's/^[[:space:]]*\(lib\(av\|sw\)[a-z]*\.so\.[0-9]*\) => \([^ ]*\).*/\1/p' | tr '\n' ' ')
missing=$(ldd /usr/local/bin/vfx | grep 'not found' || true)
if [ -z "$missing" ] && [ -n "$loaded" ]; then
	ok ffmpeg "packages: $pkgs links: $loaded"
else
	fail ffmpeg "ldd: ${missing:-no FFmpeg library linked}"
fi

# 4. vfx selftest on the CPU backend.
if out=$(vfx selftest --backend cpu 2>&1); then ok selftest "$out"; else fail selftest "$out"; fi

# 5. vfx render of generated media (vfx bench fixture: a video with an
# exact matte), custom matte, 24 frames.
t0=$(date +%s)
if ! vfx bench fixture --out "$work/in" --width 320 --height 180 --frames 24 >"$work/fixture.log" 2>&1; then
	fail render "bench fixture: $(tail -n 3 "$work/fixture.log")"
elif ! vfx render --type video --source "$work/in/source.mp4" --alpha-mode custom --alpha "$work/in/matte.mp4" \
	--prompt "warm key light from the left" --seed 7 --preset ultrafast --quiet --out "$work/render" >"$work/render.log" 2>&1; then
	fail render "$(tail -n 3 "$work/render.log")"
else
	files=$(cd "$work/render" && for f in *; do printf '%s %s bytes; ' "$f" "$(wc -c <"$f")"; done)
	if [ -s "$work/render/render.mp4" ] && [ -s "$work/render/alpha.mp4" ]; then
		ok render "$files($(($(date +%s) - t0)) s)"
	else
		fail render "outputs: $files"
	fi
fi

# 6. vfx serve: /healthz and /readyz, then one image job over HTTP (upload,
# generation, wait, download) with vfx submit.
VFX_ADMIN_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
export VFX_ADMIN_TOKEN
vfx serve --listen 127.0.0.1:0 --data "$work/serve" --concurrency 1 >"$work/serve.out" 2>"$work/serve.log" &
pid=$!
url=""
for _ in $(seq 1 300); do # at most 60 s
	url=$(sed -n 's/^vfx serve listening on \(http:\/\/[^ ]*\)$/\1/p' "$work/serve.out")
	[ -n "$url" ] && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.2
done
if [ -z "$url" ]; then
	fail serve "not listening within 60 s: $(tail -n 5 "$work/serve.log")"
else
	for path in /healthz /readyz; do
		if out=$(vfx probe --timeout 5s "$url$path" 2>&1); then
			ok "serve$path" "$url$path answered 2xx"
		else
			fail "serve$path" "$url$path: $out"
		fi
	done
	key=$(sed -n 's/^api key (shown once): \(.*\)$/\1/p' "$work/serve.out")
	acct=$(sed -n 's/^development account \([^ ]*\) .*$/\1/p' "$work/serve.out")
	export VFX_API_URL="$url" VFX_API_KEY="$key"
	t0=$(date +%s)
	if ! vfx admin accounts update "$acct" --read-rpm 600 >/dev/null 2>"$work/admin.log"; then
		fail serve-job "admin accounts update: $(tail -n 3 "$work/admin.log")"
	elif ! vfx submit --type image --source "$work/in/still.png" --alpha-mode custom --alpha "$work/in/still_matte.png" \
		--prompt "moody night city, neon rim light" --seed 7 --timeout 3m --out "$work/job" >"$work/submit.log" 2>&1; then
		fail serve-job "$(tail -n 5 "$work/submit.log")"
	elif [ -s "$work/job/render.png" ]; then
		ok serve-job "$(grep -o '^vfx_[^ ]* completed' "$work/submit.log" | head -n 1) over HTTP; render.png $(wc -c <"$work/job/render.png") bytes ($(($(date +%s) - t0)) s)"
	else
		fail serve-job "no render.png: $(ls "$work/job" 2>&1 | tr '\n' ' ')"
	fi
fi
if kill -0 "$pid" 2>/dev/null; then
	kill -TERM "$pid"
	for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done # at most 30 s
	kill -0 "$pid" 2>/dev/null && { fail serve-stop "vfx serve did not stop within 30 s of SIGTERM"; kill -KILL "$pid"; }
fi
wait "$pid" 2>/dev/null
rc=$?
[ -n "$url" ] && { if [ "$rc" = 0 ]; then ok serve-stop "exit 0 after SIGTERM"; else fail serve-stop "exit $rc after SIGTERM"; fi; }

rm -rf "$work"
echo "image-check: $fails failed"
exit "$fails"
