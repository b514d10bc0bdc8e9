# k-oom-kill: a hog of anonymous memory (no swap) in a cgroup with memory.max = L is
# OOM-killed, and memory.events oom_kill goes up.
# timeout: 60
. /oomd/lib.sh
L=$((32 * MiB))
cg=$(mkcg a)
setknob "$cg" memory.max "$L"
k0=$(evkey "$cg" oom_kill)
t0=$(now_ms)
start_hog "$cg" 128
rc=0
wait "$HOG_PID" || rc=$?
t1=$(now_ms)
k1=$(evkey "$cg" oom_kill)
[ "$rc" -eq 137 ] || fail "hog exited with status $rc, not by SIGKILL (oom_kill $k0->$k1)"
[ "$k1" -gt "$k0" ] || fail "hog was SIGKILLed but oom_kill stayed $k0"
pass "L=32MiB: hog SIGKILLed after $((t1 - t0)) ms having touched $(hog_kb) KiB;" \
	"oom_kill $k0->$k1, oom $(evkey "$cg" oom), max $(evkey "$cg" max);" \
	"peak $(mib "$(cat "$cg/memory.peak" 2>/dev/null || echo 0)") MiB"
