#!/usr/bin/env bash
# ab-render.sh: two vfx binaries alternated on one `vfx bench ffmpeg` fixture, the bench's own
# `vfx render` command line, N pairs; prints each run and the medians (wall, CPU, system CPU) and
# the peak RSS. A change's speed figure on a machine whose speed moves with the hour: the pairs
# see the same load, runs an hour apart do not.
#
#   scripts/ab-render.sh N FIXTURE PRESET BIN_A BIN_B [BENCH_DIR]
#   e.g. scripts/ab-render.sh 5 synthetic veryfast /tmp/vfx-main bin/vfx
#
# FIXTURE is synthetic or a photo fixture that `bin/vfx bench ffmpeg --out BENCH_DIR` (default
# out/bf) has written; outputs go to a temporary folder.
set -euo pipefail
if [ $# -lt 5 ]; then
	sed -n '2,11p' "$0" >&2
	exit 2
fi
n=$1 fx=$2 preset=$3 a=$4 b=$5 dir=${6:-out/bf}
case $n in '' | *[!0-9]*) echo "ab-render: N must be a count, got $n" >&2; exit 2 ;; esac
if [ "$fx" = synthetic ]; then in=$dir/input; else in=$dir/$fx/input; fi
for f in source.mp4 matte.mp4 reference.png; do
	[ -f "$in/$f" ] || { echo "ab-render: $in/$f missing: run bin/vfx bench ffmpeg --out $dir --fixtures $fx first" >&2; exit 2; }
done
for bin in "$a" "$b"; do
	[ -x "$bin" ] || { echo "ab-render: $bin is not an executable" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for ((i = 0; i < n; i++)); do
	for bin in "$a" "$b"; do
		/usr/bin/time -o "$tmp/t" -f "%e %U %S %M" "$bin" render --quiet --type video \
			--source "$in/source.mp4" --alpha-mode custom --alpha "$in/matte.mp4" --reference "$in/reference.png" \
			--prompt "warm key light from the left" --seed 1 --max-resolution 1080 \
			--preset "$preset" --crf 18 --x264-params rc-lookahead=20 --out "$tmp/out" >/dev/null
		echo "$bin $(cat "$tmp/t")" | tee -a "$tmp/runs"
	done
done
awk '
	{ w[$1] = w[$1] " " $2; c[$1] = c[$1] " " ($3 + $4); s[$1] = s[$1] " " $4; if ($5 > r[$1]) r[$1] = $5; if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 } }
	function med(str,   v, m, i, j, t) {
		m = split(str, v, " ")
		for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
		return (m % 2) ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
	}
	END { for (i = 1; i <= k; i++) { b = order[i]; printf "%s: wall median %.2f s, cpu median %.2f s, system median %.2f s, peak RSS %d MiB\n", b, med(w[b]), med(c[b]), med(s[b]), r[b] / 1024 } }
' "$tmp/runs"
