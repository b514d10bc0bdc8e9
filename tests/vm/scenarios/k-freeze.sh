# k-freeze: cgroup.freeze stops the hog's growth (usage flat for >= 1 s); cgroup.kill kills
# a frozen cgroup.
# timeout: 60
. /oomd/lib.sh
L=$((32 * MiB))
cg=$(mkcg f)
setknob "$cg" memory.high "$L"
setknob "$cg" memory.max "$((L + 64 * MiB))"
start_hog "$cg" 256
wait_for 30000 above "$cg" $((L + MiB)) || fail "usage did not pass L+1MiB within 30 s"
u0=$(current "$cg"); k0=$(hog_kb)
setknob "$cg" cgroup.freeze 1
wait_for 5000 frozen "$cg" || fail "cgroup.events did not say frozen within 5 s"
tf=$WAITED_MS
u1=$(current "$cg"); k1=$(hog_kb)
odt sleep 1500
u2=$(current "$cg"); k2=$(hog_kb)
alive "$HOG_PID" || fail "hog died while frozen"
d=$((u2 - u1))
[ "$d" -le 65536 ] || fail "usage grew $d bytes in 1.5 s while frozen"
[ "$k2" = "$k1" ] || fail "hog progressed $k1->$k2 KiB while frozen"
t0=$(now_ms)
setknob "$cg" cgroup.kill 1
wait_for 5000 dead "$HOG_PID" || fail "frozen hog alive 5 s after cgroup.kill"
tk=$(($(now_ms) - t0))
wait_for 5000 unpopulated "$cg" || fail "cgroup still populated after cgroup.kill"
pass "freeze requested at $(mib "$u0") MiB (hog $k0 KiB), frozen after ${tf} ms at $(mib "$u1") MiB (hog $k1 KiB); over 1.5 s usage changed $d bytes, hog $k1->$k2 KiB;" \
	"cgroup.kill on the frozen cgroup: hog dead in ${tk} ms, oom_kill $(evkey "$cg" oom_kill)"
