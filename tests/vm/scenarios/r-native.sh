# r-native (rule 1): without delay or disable a cgroup behaves natively: the real memory.max is
# L (no ceiling), the kernel kills the hog at once, under_oom never becomes 1.
# timeout: 60
. /oomd/lib.sh
start_daemon /shadow
L=$((32 * MiB))
cg=$(mkcg n); s=/shadow${cg#$CGROOT}
setknob "$s" memory.max "$L"
[ "$(cat "$cg/memory.max")" = "$L" ] || fail "real memory.max $(cat "$cg/memory.max"), not L"
[ "$(cat "$cg/memory.high")" = max ] || fail "real memory.high $(cat "$cg/memory.high"), not max"
k0=$(evkey "$cg" oom_kill)
t0=$(now_ms)
start_hog "$cg" 256
saw_uoom=0
while alive "$HOG_PID"; do
	grep -q '^under_oom 1' "$s/memory.oom_control" && saw_uoom=1
	[ $(($(now_ms) - t0)) -lt 20000 ] || fail "hog alive after 20 s"
	usleep 10000
done
tk=$(($(now_ms) - t0))
[ "$saw_uoom" = 0 ] || fail "under_oom was 1 on an unmanaged cgroup"
k1=$(evkey "$cg" oom_kill)
[ "$k1" -gt "$k0" ] || fail "hog died without an OOM kill"
# the shadow's count follows the daemon's sample after the kernel's (asynchronous) notification
wait_for 3000 grep -q "^oom_kill $k1\$" "$s/memory.oom_control" || fail "shadow oom_kill not $k1: $(tr '\n' ' ' <"$s/memory.oom_control")"
stop_daemon
pass "hog killed natively ${tk} ms after start; oom_kill $k0->$k1; under_oom stayed 0"
