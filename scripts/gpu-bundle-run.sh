#!/usr/bin/env bash
# Runs the vfx CUDA tests, then the benchmarks, from the folder `make gpu-bundle` wrote, and prints a
# summary. Needs an NVIDIA GPU (sm_80 or newer, or any GPU that JITs compute_90 PTX) and its driver;
# nothing else (no FFmpeg, no Go). Exit status: 0 when every test passed.
set -uo pipefail
cd "$(dirname "$0")"
# The binaries import gorgonia.org/cu, whose init() calls cuInit and exits the process when there is
# no usable GPU: check first and say so plainly instead.
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
	echo "gpu-bundle: no CUDA device (nvidia-smi missing or lists no GPU); nothing run" >&2
	exit 2
fi
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda.so.1'; then
	echo "gpu-bundle: no CUDA driver library (libcuda.so.1); nothing run" >&2
	exit 2
fi
nvidia-smi -L
out=${OUT:-.}
status=0
for t in kernels render; do
	echo "== tests: $t"
	if ! ./$t.test -test.v -test.count=1 -test.timeout 20m 2>&1 | tee "$out/$t-tests.log" | grep -E '^(--- |=== RUN.*CUDA|PASS|FAIL|ok)' | grep -v '^=== RUN' ; then :; fi
	if ! grep -q '^PASS$' "$out/$t-tests.log" || grep -q '^--- FAIL' "$out/$t-tests.log"; then status=1; fi
done
for t in kernels render; do
	echo "== benchmarks: $t"
	./$t.test -test.run '^$' -test.bench 'CUDA' -test.benchtime 2s -test.timeout 20m 2>&1 | tee "$out/$t-bench.log" | grep -E '^(Benchmark|ok|FAIL)'
done
echo "== summary"
for t in kernels render; do
	pass=$(grep -c '^    --- PASS\|^--- PASS' "$out/$t-tests.log"); fail=$(grep -c '^    --- FAIL\|^--- FAIL' "$out/$t-tests.log")
	echo "$t: $pass passed, $fail failed"
done
grep -hE '^BenchmarkCUDA(Copy|Frame|Job|Finish|Flow)' "$out"/*-bench.log
grep -hE '^BenchmarkCUDAOps/' "$out/kernels-bench.log" | awk '{for(i=1;i<=NF;i++) if($i=="pct_of_copy") print $1, $(i-1)"%"}'
[ $status = 0 ] && echo "gpu-bundle: ALL TESTS PASSED" || echo "gpu-bundle: TESTS FAILED (see *-tests.log)"
exit $status
