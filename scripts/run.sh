#!/bin/sh
# The main job: builds oomdelayfs and mounts the shadow tree of this host's cgroup-v2
# tree on MOUNTPOINT (default /run/oomdelayfs/shadow) in the foreground. On a host
# without a cgroup-v2 memory controller (e.g. a cgroup-v1 or hybrid host) it boots
# the bundled VM on Debian's newest 7.x kernel, demonstrates the shadow tree there and prints the
# demonstration's transcript (the mount, the synthetic files, the hold, the handler's raise,
# the end).
# Usage: scripts/run.sh [MOUNTPOINT] [oomdelayfs options...]
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build
"$top/scripts/deps.sh"
[ -f "$build/build.ninja" ] || meson setup "$build" "$top"
meson compile -C "$build"

cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
if [ -n "$cg2" ] && grep -qw memory "$cg2/cgroup.controllers" 2>/dev/null; then
	mnt=${1:-/run/oomdelayfs/shadow}
	[ $# -gt 0 ] && shift
	mkdir -p "$mnt"
	echo "run: serving $cg2 on $mnt (Ctrl-C unmounts and hands every cgroup back)"
	exec "$build/daemon/oomdelayfs" --cgroup-root "$cg2" "$@" "$mnt"
fi
echo "run: this host has no cgroup-v2 memory controller${cg2:+ ($cg2 lacks memory)}; demonstrating"
echo "run: in a VM on Debian's newest 7.x kernel (qemu; about a minute, the transcript follows)"
rc=0
"$top/tests/vm/run-vm.sh" --kernel 7 --scenario demo --build-dir "$build" >"$build/run-demo.log" 2>&1 || rc=$?
# The scenario's own transcript from the VM's serial console, without the kernel's lines.
log=$build/vm/serial-7.log
if [ -f "$log" ] && tr -d '\r' <"$log" | grep -q '^=== demo'; then
	tr -d '\r' <"$log" | awk '/^=== demo/ {on = 1; next}
		on && /^RESULT / {print "run: " $4 " " substr($0, index($0, $5)); exit}
		on && !/^\[ *[0-9]+\.[0-9]+\]/ && !/^\[demo dmesg\]/ && !/^oomd-vm: / && !/^(PASS|FAIL|SKIP) / {print "  " $0}'
else
	tail -n 20 "$build/run-demo.log"
fi
[ "$rc" = 0 ] || echo "run: the VM run failed (exit $rc); its log: $build/run-demo.log, $log"
exit "$rc"
