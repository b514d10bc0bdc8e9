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
odt hog 1 --cgroup "$cg" & bystander=$!
start_hog "$cg" 256
wait_for 30000 uoom "$s" || fail "no hold within 30 s: $(hold_state "$cg" "$s")"
dl=$(deadline_ms "$cg")
held_until "$dl" "$cg" "$(evkey "$cg" oom_kill)" "$HOG_PID" "$bystander"
alldead() { dead "$HOG_PID" && dead "$bystander"; }
wait_for 10000 alldead || fail "not every process of the group died within 10 s"
late=$(($(now_ms) - dl))
wait_for 3000 unpopulated "$cg" || fail "cgroup still populated"
kk=$(sed -n 's/^oom_kill //p' "$s/memory.oom_control")
[ "$kk" -ge 2 ] || fail "oom_kill reads $kk after a group kill of 2 processes"
stop_daemon
pass "whole group (2 processes) killed $late ms after the deadline; oom_kill $kk"
