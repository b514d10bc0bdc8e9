#!/bin/sh
# Runs every test: installs what is needed, builds with -Werror, runs the criterion
# unit tests, a short fuzz run, the package test, the real-kernel scenarios in the VM on Debian's 6.1,
# 6.12 and newest 7.x kernels, and, with OOMD_TEST_SD=1, the real-systemd scenarios (tests/sd:
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
meson test -C "$build" --print-errorlogs --suite vm --verbose
# The real-systemd scenarios (tests/sd) run only when asked (OOMD_TEST_SD=1): issue 19 is open;
# sd-remove and sd-restart have passed once on a quiet host, sd-install fails on its journal
# query, sd-crash/sd-watchdog/sd-upgrade/sd-race and e-* have not yet passed, so they are not
# yet part of the verdict. Said visibly, never counted as passing.
if [ "${OOMD_TEST_SD:-0}" = 1 ]; then
	# the .deb test-deb.sh just built is the one the sd scenarios install
	OOMD_SD_DEB=$(ls "$build-deb"/oomdelayfs_*_amd64.deb | grep -v dbgsym | head -n 1) \
		meson test -C "$build" --print-errorlogs --suite sd --verbose
else
	echo "test.sh: SKIP the real-systemd suite (tests/sd, issue 19: not yet passing; OOMD_TEST_SD=1 runs it)"
fi
