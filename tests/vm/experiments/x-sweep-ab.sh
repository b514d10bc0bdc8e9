# x-sweep-ab: an experiment, not part of the suite (issue 23). An all-files read of 2,000
# cgroups through the shadow with the sweeper, without it, and with it again, each phase
# alternating with floorfs -r -F 0 -s (1.2 s pauses, 5 runs of memory.current and memory.stat).
# Needs a build whose fs_sweeper_new (fs/sweep.c) returns NULL when OOMD_X_NOSWEEP is set in
# its environment (two lines, not in the product: `if (getenv("OOMD_X_NOSWEEP")) return
# NULL;` and <stdlib.h>), built in a worktree:
#   cp tests/vm/experiments/x-sweep-ab.sh tests/vm/scenarios/
#   OOMD_VM_MEM=3072 tests/vm/run-vm.sh --build-dir BUILD --kernel 7 --scenario x-sweep-ab
#   rm tests/vm/scenarios/x-sweep-ab.sh
# timeout: 1800
. /oomd/lib.sh
N=2000
p=$(mkcg x)
setknob "$p" cgroup.subtree_control +memory
(cd "$p" && seq 0 $((N - 1)) | sed 's/^/c/' | xargs mkdir) || fail "mkdir"
floor_exact "$p" $N /floorx
t() { odt sleep 1200; a=$(now_ms); cat "$1"/*/"$2" >/dev/null; echo $(($(now_ms) - a)); }
phase() {
	cat "/shadow${p#$CGROOT}"/*/memory.current >/dev/null
	for r in 1 2 3 4 5; do
		for f in memory.current memory.stat; do
			s=$(t "/shadow${p#$CGROOT}" $f); fl=$(t "/floorx${p#$CGROOT}" $f)
			echo "X $1 $f run $r: shadow $s floor $fl"
		done
	done
}
start_daemon /shadow
phase sweep
stop_daemon
export OOMD_X_NOSWEEP=1
start_daemon /shadow
unset OOMD_X_NOSWEEP
phase nosweep
stop_daemon
start_daemon /shadow
phase sweep2
stop_daemon
kill -TERM "$FLOOR_PID"
pass "measured"
