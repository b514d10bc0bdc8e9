# x-scale-strace: an experiment, not part of the suite. Where a restart's time goes at scale: N
# managed cgroups (T set once on their parent through the shadow), the daemon SIGKILLed and started
# again under `strace -c -f`, then stopped (SIGTERM: the hand-back); prints strace's table (syscalls, counts,
# time) and the calls per cgroup. Needs strace in the image. Run it by copying it among the scenarios:
#   cp tests/vm/experiments/x-scale-strace.sh tests/vm/scenarios/
#   OOMD_VM_EXTRA_BINS=/usr/bin/strace OOMD_VM_APPEND='OOMD_SCALE_N=1000' \
#     tests/vm/run-vm.sh --build-dir build --kernel 6.12 --scenario x-scale-strace
#   rm tests/vm/scenarios/x-scale-strace.sh
# timeout: 900
. /oomd/lib.sh
command -v strace >/dev/null || skip "strace is not in the image (OOMD_VM_EXTRA_BINS=/usr/bin/strace)"
N=${OOMD_SCALE_N:-1000}
L=$((16 * MiB))
start_daemon /shadow
p=$(mkcg x); sp=/shadow${p#$CGROOT}
setknob "$p" cgroup.subtree_control +memory
(cd "$p" && seq 1 "$N" | sed 's/^/c/' | xargs mkdir) || fail "mkdir of $N cgroups"
for i in $(seq 1 "$N"); do
	echo "$L" >"$p/c$i/memory.max" || fail "real memory.max of c$i"
done
echo 5000 >"$sp/memory.oom_delay_millisecs" || fail "T on the parent"
kill_daemon
n0=$(grep -c 'serving ' /tmp/oomdelayfs.log)
# shellcheck disable=SC2086
strace -c -f -o /tmp/strace.out /bin/oomdelayfs $OOMD_DAEMON_ARGS "$SHADOW" >>/tmp/oomdelayfs.log 2>&1 &
ST=$!
wait_for 600000 _served "$n0" || fail "not served within 600 s under strace"
grep 'cgroups found' /tmp/oomdelayfs.log | tail -n 1
# strace under TCG does not come back from SIGINT (seen: > 60 s detaching the daemon's threads):
# the daemon is stopped instead, and the table counts its hand-back of N cgroups too
kill -TERM "$(pidof oomdelayfs)"
wait_for 300000 dead "$ST" || fail "strace alive 300 s after the daemon's SIGTERM"
cat /tmp/strace.out
total=$(awk '$NF == "total" { print $(NF-2) }' /tmp/strace.out)
pass "restart and hand-back of $N cgroups under strace -c: $total system calls, $((total / N)) per cgroup"
