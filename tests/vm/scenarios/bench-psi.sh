# bench-psi (benchmark, not a test; runs only when named; issue 22): how late a pressure level
# is heard. One cgroup c under a 32 MiB limit with swap (the emulated NVMe disk, swap_on); a
# round: a hog touches 24 MiB, rests 1.5 s, says "go" (the onset, CLOCK_MONOTONIC) and touches
# 24 MiB more, then re-touches all 48 MiB (one byte a page: swap-in, reclaim, swap-out) until
# 3 s after go. Per round the first signal after go of each listener, five rounds:
#   shadow-low|medium|critical  the shadow's memory.pressure_level listeners on c (--layout v1)
#   psi-10ms|100ms|full500ms    the kernel's own PSI triggers on c's real memory.pressure, polled
#                               directly, with the specs the shadow uses for those levels
#                               (core/vmpressure.c: some 10000, some 100000, full 500000 per 1 s)
#   v1-low|medium|critical      vmpressure on native cgroup v1 (6.1 only: the controller moved)
# medium has no second source in the shadow (memory.events.local gives low and critical only),
# so shadow-medium against psi-100ms is the PSI path alone: the daemon's poll wake-up, its walk
# and the notifier's eventfd write. Prints one BENCH line per listener (latencies in ms, the
# median, how many rounds heard it). Figures go to docs/DESIGN.md.
# timeout: 600
# runs first: a native v1 mount needs the memory controller free of dying memcgs
# disk: swap
. /oomd/lib.sh
N=test-$OOMD_SCENARIO
ROUNDS=${OOMD_BENCH_ROUNDS:-5}
case $OOMD_KERNEL in
6.1 | 6.1.*) native=1 ;;
*) native=0 ;;
esac
[ $native = 1 ] && v1native_enter "$@"
swap_on

# rounds CGDIR TAG: ROUNDS onsets in CGDIR; the go times in /tmp/bp.TAG.go
rounds() {
	: >"/tmp/bp.$2.go"
	i=0
	while [ $i -lt "$ROUNDS" ]; do
		cgevl thrash "$1" 24 24 3000 >/tmp/bp.$2.round
		grep '^go' /tmp/bp.$2.round | cut -d' ' -f2 >>"/tmp/bp.$2.go"
		echo "# $2 round $i: $(tr '\n' ' ' </tmp/bp.$2.round) memory.pressure: $(head -n 1 "$CGROOT/$N/c/memory.pressure" 2>/dev/null)"
		sleep 2.5
		i=$((i + 1))
	done
}
# report TAG NAME...: a BENCH line per listener /tmp/bp.TAG.NAME
report() {
	_t=$1
	shift
	for l in "$@"; do
		awk -v l="$l" '
			FNR == NR { go[++n] = $1; next }
			$1 == "event" { ev[++m] = $2 }
			END {
				heard = 0; s = ""
				for (i = 1; i <= n; i++) {
					lat = -1
					for (j = 1; j <= m; j++) if (ev[j] >= go[i] && ev[j] < go[i] + 5000) { lat = ev[j] - go[i]; break }
					if (lat >= 0) { v[++heard] = lat; s = s " " lat } else s = s " -"
				}
				for (i = 1; i <= heard; i++) for (j = i + 1; j <= heard; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
				med = heard ? v[int((heard + 1) / 2)] : "-"
				printf "BENCH %s: median %s ms, heard in %d of %d rounds; ms after go:%s\n", l, med, heard, n, s
			}' "/tmp/bp.$_t.go" "/tmp/bp.$_t.$l"
	done
}
listen() { # NAME CMD...: one listener in the background
	_n=$1
	shift
	"$@" --timeout 600000 >/tmp/bp.$T.$_n 2>&1 &
	lpids="$lpids $!"
}

if [ $native = 1 ]; then
	v1native_mount 590
	T=v1 lpids=''
	mkdir -p /v1mem/$N/c || fail "mkdir /v1mem/$N/c"
	echo 32M >/v1mem/$N/c/memory.limit_in_bytes || fail "cannot set the v1 limit"
	for lv in low medium critical; do
		listen v1-$lv cgevl listen /v1mem/$N/c/memory.pressure_level $lv
	done
	sleep 1
	rounds /v1mem/$N/c v1
	rmdir /v1mem/$N/c /v1mem/$N
	for p in $lpids; do wait "$p"; done
	report v1 v1-low v1-medium v1-critical >/tmp/bp.out.v1
	v1native_umount
fi

start_daemon /shadow --layout v1
T=shadow lpids=''
mkdir -p "$CGROOT/$N/c" 2>/dev/null
echo +memory >"$CGROOT/$N/cgroup.subtree_control"
echo $((32 * MiB)) >"$CGROOT/$N/c/memory.max" || fail "cannot set memory.max"
for lv in low medium critical; do
	listen shadow-$lv cgevl listen /shadow/$N/c/memory.pressure_level $lv
done
listen psi-10ms cgevl psi "$CGROOT/$N/c" "some 10000 1000000"
listen psi-100ms cgevl psi "$CGROOT/$N/c" "some 100000 1000000"
listen psi-full500ms cgevl psi "$CGROOT/$N/c" "full 500000 1000000"
sleep 1
grep -h '^refused' /tmp/bp.shadow.* && fail "a listener was refused: $(grep -l '^refused' /tmp/bp.shadow.*)"
rounds "$CGROOT/$N/c" shadow
rmdir "$CGROOT/$N/c" "$CGROOT/$N"
for p in $lpids; do wait "$p"; done
stop_daemon
swap_off
[ $native = 1 ] && kill "$V1N_WD" 2>/dev/null
report shadow shadow-low psi-10ms shadow-medium psi-100ms shadow-critical psi-full500ms >/tmp/bp.out.shadow
cat /tmp/bp.out.v1 /tmp/bp.out.shadow 2>/dev/null
m() { grep "^BENCH $1:" /tmp/bp.out.* | sed 's/.*median \([^ ]*\) ms, heard in \([0-9]*\) of \([0-9]*\).*/\1 (\2\/\3)/'; }
grep -q 'heard in [1-9]' /tmp/bp.out.shadow || fail "no listener heard any round: $(tr '\n' ';' </tmp/bp.out.shadow)"
v1=''
[ $native = 1 ] && v1="; v1 vmpressure low $(m v1-low) medium $(m v1-medium) critical $(m v1-critical)"
pass "median ms after onset (rounds heard): shadow low $(m shadow-low) medium $(m shadow-medium)" \
	"critical $(m shadow-critical); kernel PSI some 10ms $(m psi-10ms) some 100ms $(m psi-100ms)" \
	"full 500ms $(m psi-full500ms)$v1"
