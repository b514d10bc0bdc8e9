# d-v1memsw (issue 22): a threshold on memory.memsw.usage_in_bytes (memory + swap) is signalled
# when memory + swap crosses it, upwards and downwards, as on native cgroup v1 (6.1 only) and
# through the shadow tree's --layout v1 (where memsw is memory.current + memory.swap.current,
# docs/V1-LAYOUT.md). The VM gets swap for it (an emulated NVMe disk, swap_on). Workload in P/c
# under a 32 MiB limit and no memsw limit: a 48 MiB hog held 2 s, then exit; about 16 MiB go to
# swap, so memsw passes 40 MiB while the memory usage stays at the limit. Listeners: memsw at
# 40M and 16M, usage at 40M (never crossed: the limit is below it) and 16M. The transcript says
# per listener how many signals came while the hog grew and held (up), after it exited (down)
# and at rmdir; native v1 and the shadow are compared line by line. On 6.12 and 7 the shadow
# is compared with 6.1's native transcript embedded below, and so is 6.1's own shadow run
# unless OOMD_V1MEMSW_NATIVE=1 (on the kernel command line: OOMD_VM_APPEND) asks for the native
# run again: after it 6.1 kept 3 removed v1 memcgs alive (swap use; swapoff did not free
# them within 90 s), so the memory controller could not go back to cgroup v2 and every later
# scenario of the boot would have run without it.
# timeout: 300
# runs first: a native v1 mount needs the memory controller free of dying memcgs
# disk: swap
. /oomd/lib.sh
N=test-$OOMD_SCENARIO
case $OOMD_KERNEL in
6.1 | 6.1.*) native=${OOMD_V1MEMSW_NATIVE:-0} ;;
*) native=0 ;;
esac
[ $native = 1 ] && v1native_enter "$@"
swap_on

# side ROOT TAG: one run of the workload with the four listeners; transcript on stdout
side() {
	R=$1 T=$2
	P=$R/$N C=$R/$N/c
	mkdir "$P" || fail "$T: mkdir $P"
	[ -e "$P/cgroup.subtree_control" ] && echo +memory >"$P/cgroup.subtree_control" 2>/dev/null
	mkdir "$C" || fail "$T: mkdir $C"
	[ -e "$C/memory.memsw.usage_in_bytes" ] || fail "$T: $C has no memory.memsw.usage_in_bytes"
	echo 32M >"$C/memory.limit_in_bytes" || fail "$T: cannot set $C/memory.limit_in_bytes"
	rm -f /tmp/ms.$T.*
	set -- msw40 memory.memsw.usage_in_bytes 40M msw16 memory.memsw.usage_in_bytes 16M \
		use40 memory.usage_in_bytes 40M use16 memory.usage_in_bytes 16M
	names="" pids=""
	while [ $# -ge 3 ]; do
		cgevl listen "$C/$2" "$3" --timeout 120000 >/tmp/ms.$T.$1 2>&1 &
		names="$names $1" pids="$pids $!"
		shift 3
	done
	for l in $names; do
		wait_for 5000 grep -qs -e '^registered' -e '^refused' /tmp/ms.$T.$l
	done
	a0=$(now_ms)
	: >/tmp/ms.$T.rel
	cgevl hog "$C" 48 2000 --release /tmp/ms.$T.rel >/tmp/ms.$T.hog &
	hp=$!
	wait_for 60000 sh -c "[ \$(cat $C/memory.memsw.usage_in_bytes) -gt $((44 * MiB)) ]" ||
		echo "# $T memsw never above 44 MiB"
	echo "# $T held: usage $(mib "$(cat "$C/memory.usage_in_bytes")") MiB, memsw" \
		"$(mib "$(cat "$C/memory.memsw.usage_in_bytes")") MiB, swap used $(awk 'NR > 1 {print $4}' /proc/swaps) KiB"
	wait $hp
	# up/down split at the moment the hog began to exit, not at its parent's report after the
	# exit: native v1 signals the downward crossing inside the exit's uncharge (6.1: 11 ms
	# before the report), and counted it as "up"
	h1=$(cat /tmp/ms.$T.rel)
	[ -n "$h1" ] || h1=$(cut -d' ' -f2 /tmp/ms.$T.hog)
	sleep 1
	echo "# $T after exit: usage $(cat "$C/memory.usage_in_bytes") memsw $(cat "$C/memory.memsw.usage_in_bytes")"
	r0=$(now_ms)
	echo "# $T times: hog $a0, exit $h1, rmdir $r0"
	rmdir "$C" || echo "$T: rmdir $C failed"
	sleep 1
	rmdir "$P" || echo "$T: rmdir $P failed"
	for p in $pids; do
		wait "$p"
	done
	echo "hog: $(cut -d' ' -f3 /tmp/ms.$T.hog)"
	for l in $names; do
		f=/tmp/ms.$T.$l
		echo "# $T $l: $(tr '\n' ' ' <"$f")"
		if grep -q '^refused' "$f"; then
			echo "$l: $(grep '^refused' "$f")"
			continue
		fi
		awk -v l=$l -v a=$a0 -v h=$h1 -v r=$r0 '
			$1 == "event" { split($3, c, "="); if ($2 < h) nu += c[2]; else if ($2 < r) nd += c[2]; else nr += c[2] }
			$1 == "registered" { reg = $2 }
			$1 == "event" && !first && $2 >= a { first = $2 }
			$1 == "removed" { gone = 1 }
			END {
				printf "%s: up %d down %d rmdir %d%s\n", l, nu, nd, nr, gone ? "" : " (not seen removed)"
				if (first) printf "# latency %s: first signal %d ms after the hog started\n", l, first - a
			}' "$f"
	done
}

if [ $native = 1 ]; then
	v1native_mount 290
	side /v1mem native >/tmp/ms.out.native 2>&1
	echo "--- native:"; cat /tmp/ms.out.native
	# swap entries (and their swap cache) keep the removed v1 memcgs alive, and with them the
	# v1 hierarchy: 6.1 still had 3 after 90 s of drop_caches. swapoff brings them in and lets
	# them go; the shadow's run below gets the swap back.
	swap_off
	v1native_umount
	swap_on
else
	# 6.1's native transcript (d-v1memsw on 6.1, 2026-12-05)
	cat >/tmp/ms.out.native <<'GOLDEN'
hog: exit=0
msw40: up 1 down 1 rmdir 1
msw16: up 1 down 1 rmdir 1
use40: up 0 down 0 rmdir 1
use16: up 1 down 1 rmdir 1
GOLDEN
fi
start_daemon /shadow --layout v1
side /shadow shadow >/tmp/ms.out.shadow 2>&1
stop_daemon
swap_off
[ $native = 1 ] && kill "$V1N_WD" 2>/dev/null
echo "--- shadow (--layout v1):"; cat /tmp/ms.out.shadow
grep -v '^#' /tmp/ms.out.native >/tmp/ms.n
grep -v '^#' /tmp/ms.out.shadow >/tmp/ms.s
grep -q '^msw40: up [1-9]' /tmp/ms.s || fail "the shadow's memsw 40M threshold was not signalled upwards: $(grep '^msw40' /tmp/ms.s)"
grep -q '^use40: up 0 down 0' /tmp/ms.s || fail "the shadow's usage 40M threshold (above the limit) was signalled: $(grep '^use40' /tmp/ms.s)"
[ -s /tmp/ms.n ] || skip "no native transcript to compare with (run on 6.1 first and embed it)"
echo "--- differences (- native v1, + shadow):"
if ! diff -U0 /tmp/ms.n /tmp/ms.s | grep -v -e '^---' -e '^+++' -e '^@@' | tee /tmp/ms.d | grep -q .; then
	pass "memsw and usage thresholds: $(wc -l </tmp/ms.n) listener lines, shadow --layout v1 as native v1;" \
		"$(grep '^# latency msw40' /tmp/ms.out.shadow | sed 's/^# latency //')"
fi
fail "shadow differs from native v1: $(tr '\n' ';' </tmp/ms.d)"
