# x-stat-walk: an experiment, not part of the suite (issue 23). Why an all-files read of
# memory.stat costs the shadow more over floor-exact than one of memory.current: the FUSE
# requests per file of each walk (the daemon's counters), the daemon's and the floor's system
# calls per walk (strace -c -f, attached for one walk each), and 5 paired timings of each
# file without strace, over 500 cgroups.
#   cp tests/vm/experiments/x-stat-walk.sh tests/vm/scenarios/
#   OOMD_VM_EXTRA_BINS=/usr/bin/strace OOMD_VM_MEM=3072 tests/vm/run-vm.sh --build-dir build \
#     --kernel 6.12 --scenario x-stat-walk
#   rm tests/vm/scenarios/x-stat-walk.sh
# timeout: 1200
. /oomd/lib.sh
command -v strace >/dev/null || skip "strace is not in the image (OOMD_VM_EXTRA_BINS=/usr/bin/strace)"
N=500
p=$(mkchildren x $N)
floor_exact "$p" $N /floorx
start_daemon /shadow
sp=/shadow${p#$CGROOT}; fx=/floorx${p#$CGROOT}
ops() {
	oomdelayfs status --metrics |
		sed -n 's/^oomdelayfs_fuse_requests_total{op="\([a-z_]*\)"} \([0-9]*\)$/\1 \2/p' >"$1"
}
for f in memory.current memory.stat; do
	cat "$sp"/*/$f >/dev/null; cat "$fx"/*/$f >/dev/null
	odt sleep 1200
	ops /tmp/o0; cat "$sp"/*/$f >/dev/null; ops /tmp/o1
	echo "X ops $f: $(awk -v d=$N 'NR == FNR { a[$1] = $2; next } $2 != a[$1] { printf "%s=%.2f ", $1, ($2 - a[$1]) / d }' /tmp/o0 /tmp/o1)"
	for w in shadow floor; do
		pid=$DAEMON_PID; d=$sp
		[ $w = floor ] && pid=$FLOOR_PID && d=$fx
		odt sleep 1200
		strace -c -f -p "$pid" -o /tmp/sc 2>/dev/null &
		s=$!
		sleep 1
		cat "$d"/*/$f >/dev/null
		kill -INT $s; wait $s
		echo "X strace $w $f:"; sed -n '3,14p' /tmp/sc | awk '{ print "X   " $0 }'
	done
done
for r in 1 2 3 4 5; do
	for f in memory.current memory.stat; do
		odt sleep 1200; a=$(now_ms); cat "$sp"/*/$f >/dev/null; s=$(($(now_ms) - a))
		odt sleep 1200; a=$(now_ms); cat "$fx"/*/$f >/dev/null; x=$(($(now_ms) - a))
		echo "X time $f run $r: shadow $s floor-exact $x"
	done
done
stop_daemon
kill -TERM "$FLOOR_PID"
pass "measured"
