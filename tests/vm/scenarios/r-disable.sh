# r-disable (rules 4, 8, 12): oom_kill_disable 1 with a 500 ms delay holds for 3x the delay with
# no kill, under_oom 1 on the cgroup and on its child where the hog runs; writing 0 then kills at once.
# timeout: 90
. /oomd/lib.sh
start_daemon /shadow
L=$((32 * MiB))
cg=$(mkcg x); s=/shadow${cg#$CGROOT}
setknob "$s" cgroup.subtree_control +memory
mkdir "$s/w" || fail "shadow mkdir w"
setknob "$s" memory.max "$L"
setknob "$s" memory.oom_delay_millisecs 500
setknob "$s" memory.oom_control 1
grep -q '^oom_kill_disable 1' "$s/memory.oom_control" || fail "oom_kill_disable does not read 1"
uoom() { grep -q '^under_oom 1' "$1/memory.oom_control"; }
k0=$(evkey "$cg" oom_kill)
start_hog "$cg/w" 256
wait_for 30000 uoom "$s" || fail "no hold within 30 s: $(hold_state "$cg" "$s")"
t0=$(now_ms)
while [ $(($(now_ms) - t0)) -lt 1500 ]; do
	alive "$HOG_PID" || fail "hog died $(($(now_ms) - t0)) ms into a disabled hold"
	[ "$(evkey "$cg" oom_kill)" = "$k0" ] || fail "oom_kill moved while disabled"
	usleep 50000
done
uoom "$s" || fail "under_oom not 1 after 1.5 s"
uoom "$s/w" || fail "under_oom of the child (where the hog runs) not 1 during its parent's hold (rule 12)"
u=$(current "$cg")
frz=$(grep -c '^frozen 1' "$cg/cgroup.events")
t1=$(now_ms)
setknob "$s" memory.oom_control 0
wait_for 5000 dead "$HOG_PID" || fail "hog alive 5 s after writing 0"
tk=$(($(now_ms) - t1))
[ "$(evkey "$cg" oom_kill)" -gt "$k0" ] || fail "hog died without an OOM kill"
stop_daemon
pass "held 1.5 s (3x T) at $(mib "$u") MiB (frozen=$frz) with no kill, under_oom 1 on the cgroup and its child; writing 0 killed in ${tk} ms"
