# r-group: --kill-mode group kills the whole cgroup (cgroup.kill) when the delay is over, and
# oom_kill counts every process killed (rule 10).
# timeout: 90
. /oomd/lib.sh
start_daemon /shadow --kill-mode group
L=$((32 * MiB))
cg=$(mkcg g); s=/shadow${cg#$CGROOT}
setknob "$s" memory.max "$L"
setknob "$s" memory.oom_delay_millisecs 800
uoom() { grep -q '^under_oom 1' "$1/memory.oom_control"; }
k0=$(evkey "$cg" oom_kill)
odt hog 1 --cgroup "$cg" & bystander=$!
start_hog "$cg" 256
wait_for 30000 uoom "$s" || fail "no hold within 30 s: $(hold_state "$cg" "$s")"
dlns=$(deadline_ns "$cg"); dl=$((dlns / 1000000))
held_until "$dl" "$cg" "$k0" "$HOG_PID" "$bystander"
alldead() { dead "$HOG_PID" && dead "$bystander"; }
wait_for 10000 alldead || fail "not every process of the group died within 10 s"
late=$(($(now_ms) - dl))
wait_for 3000 unpopulated "$cg" || fail "cgroup still populated"
# the daemon's kill: it began at or after the deadline (its log), whatever this shell saw
kt=$(kill_times "$cg" "$dlns"); began=${kt% *}
awk -v l="$began" 'BEGIN { exit !(l >= 0) }' || fail "the daemon's group kill began $began ms relative to the deadline: BEFORE it (rule 9)"
# the shadow counts the group kill once the cgroup.kill write has returned and been booked
kk2() { [ "$(sed -n 's/^oom_kill //p' "$s/memory.oom_control")" -ge 2 ]; }
wait_for 3000 kk2 || fail "oom_kill reads $(sed -n 's/^oom_kill //p' "$s/memory.oom_control") 3 s after a group kill of 2 processes"
kk=$(sed -n 's/^oom_kill //p' "$s/memory.oom_control")
stop_daemon
pass "whole group (2 processes): the daemon's cgroup.kill began $began ms after the deadline, both seen dead by this shell at +$late ms; oom_kill $kk"
