#!/bin/sh
# Builds the libFuzzer targets with clang and runs each for RUNS inputs (default
# 200000; CI uses a short run). 0 crashes and 0 sanitizer reports, or it fails.
# Usage: tests/fuzz/run.sh [RUNS] [BUILD_DIR]
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
runs=${1:-200000}
build=${2:-$top/build-fuzz}
if [ ! -f "$build/build.ninja" ]; then
	CC=clang meson setup "$build" "$top" -Dfuzz=true -Dtests=disabled -Db_lundef=false >/dev/null
fi
targets="fuzz_parse fuzz_engine fuzz_options fuzz_pid fuzz_v1 fuzz_ocispec"
# shellcheck disable=SC2086
meson compile -C "$build" $(for t in $targets; do case $t in fuzz_ocispec) printf ' oci/%s' "$t" ;; *) printf ' tests/fuzz/%s' "$t" ;; esac; done) >/dev/null
corpus=$build/fuzz-corpus
for t in $targets; do
	mkdir -p "$corpus/$t"
	start=$(date +%s)
	bin=$build/tests/fuzz/$t
	[ "$t" != fuzz_ocispec ] || bin=$build/oci/$t
	if ! "$bin" -runs="$runs" -max_len=256 "$corpus/$t" >"$build/$t.log" 2>&1; then
		tail -40 "$build/$t.log"
		echo "FAIL fuzz $t: crash or sanitizer report (log: $build/$t.log)"
		exit 1
	fi
	execs=$(grep -o 'Done [0-9]* runs' "$build/$t.log" | awk '{print $2}')
	echo "PASS fuzz $t: ${execs:-?} inputs in $(( $(date +%s) - start )) s, 0 crashes"
done
