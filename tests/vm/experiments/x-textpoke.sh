# x-textpoke: an experiment, not part of the suite. It shows why /init brings the second CPU up
# only after the static keys are set: under QEMU's multi-threaded TCG (Debian 12's QEMU 7.2) a
# vCPU can run a stale translation of kernel code that the other vCPU has just rewritten.
# It switches the sched_schedstats static key as fast as a shell can while both vCPUs context-
# switch through the rewritten scheduler code. Run it by copying it among the scenarios:
#   cp tests/vm/experiments/x-textpoke.sh tests/vm/scenarios/
#   tests/vm/run-vm.sh --build-dir build --kernel all --scenario x-textpoke
#   rm tests/vm/scenarios/x-textpoke.sh
# Seen on 2026-12-04: 6.12 "Oops: int3" in update_curr_se and a panic 29 s after boot; 6.1 hung
# (no result, the VM timed out). A PASS line would mean no crash in 60 s of switching.
# timeout: 120
. /oomd/lib.sh
[ -w /proc/sys/kernel/sched_schedstats ] || skip "no /proc/sys/kernel/sched_schedstats"
for c in 1 2; do ( while :; do sh -c : ; done ) & done
n=0
t0=$(date +%s)
while [ $(( $(date +%s) - t0 )) -lt 60 ]; do
	echo 1 >/proc/sys/kernel/sched_schedstats
	echo 0 >/proc/sys/kernel/sched_schedstats
	n=$((n + 2))
done
kill $(jobs -p) 2>/dev/null
pass "$n switches of sched_schedstats in 60 s with $(grep -c '^processor' /proc/cpuinfo) cpus online, no crash"
