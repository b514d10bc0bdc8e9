#!/bin/sh
# Runs every test: installs what is needed, builds with -Werror, runs the criterion
# unit tests, a short fuzz run, the package test, the real-kernel scenarios in the VM on Debian's 6.1,
# 6.12 and newest 7.x kernels, and beside them (OOMD_TEST_SD=0 skips it) the real-systemd scenarios (tests/sd:
# Debian 12 with systemd as PID 1 and its engines, the .deb installed) on 6.12 and 7.x.
# Usage: scripts/test.sh [BUILD_DIR]   (default: build)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
"$top/scripts/deps.sh"
if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" "$top"
fi
meson compile -C "$build"
meson test -C "$build" --print-errorlogs --suite unit --suite fs
# a short fuzz run of every parser of user input (tests/fuzz/run.sh RUNS for a longer one)
"$top/tests/fuzz/run.sh" "${OOMD_FUZZ_RUNS:-20000}" "$build-fuzz"
# the Debian package: built, lintian-clean, installed into a clean Debian 12 (debootstrap)
"$top/tests/pkg/test-deb.sh" "$build-deb"
# The VM suite (tests/vm: the busybox lab on 6.1, 6.12 and 7.x) and the real-systemd suite
# (tests/sd: Debian 12 booted with systemd 252, the .deb test-deb.sh just built installed, Debian's
# engines; 6.12 and 7.x) run side by side: every VM boot of either takes one of the host's two
# VM slots (tests/vm/slot.sh), so the host never runs more than two VMs. The sd suite's lines are
# prefixed [sd]; each suite's summary is printed by its own runner.
sdrc=$build/sd-suite.rc
rm -f "$sdrc" "$build/vm/not-passed.txt" "$build/sd/not-passed.txt"
# On by default (issue 19: every systemd path and engine is tested as an operator meets them);
# OOMD_TEST_SD=0 skips it, with a SKIP line, never counted as passing.
if [ "${OOMD_TEST_SD:-1}" = 1 ]; then
	(
		rc=0
		OOMD_SD_SHARDS=${OOMD_SD_SHARDS:-2} OOMD_SD_DEB=$(ls "$build-deb"/oomdelayfs_*_amd64.deb | grep -v dbgsym | head -n 1) \
			meson test -C "$build" --no-rebuild --print-errorlogs --suite sd --verbose --logbase testlog-sd || rc=$?
		echo "$rc" >"$sdrc"
	) 2>&1 | sed -u 's/^/[sd] /' &
	sdpid=$!
else
	echo "test.sh: SKIP the real-systemd suite (tests/sd): OOMD_TEST_SD=0 was given"
	echo 0 >"$sdrc"
	sdpid=''
fi
vmrc=0
# Each kernel's VM scenarios in three boots and its sd scenarios in two (OOMD_VM_SHARDS,
# OOMD_SD_SHARDS; dealt by the durations CI measured, tests/vm/costs and tests/sd/costs): lumps of
# 10-14 minutes left one slot idle while the last ran alone; thirteen of 4-7 minutes keep both
# busy to the end (CI's whole run within 45 minutes, issue 19).
OOMD_VM_SHARDS=${OOMD_VM_SHARDS:-3} meson test -C "$build" --no-rebuild --print-errorlogs --suite vm --verbose || vmrc=$?
[ -z "$sdpid" ] || wait "$sdpid" || true
sd=$(cat "$sdrc" 2>/dev/null || echo 'no status')
# CI shows a log's head and tail only: every scenario that did not pass, last
for f in "$build/vm/not-passed.txt" "$build/sd/not-passed.txt"; do
	[ -s "$f" ] && sed "s|^|test.sh: not passed ($(basename "$(dirname "$f")")): |" "$f"
done
echo "test.sh: VM suite exit status $vmrc, real-systemd suite exit status $sd"
[ "$vmrc" = 0 ] && [ "$sd" = 0 ]
