# k-high-throttle: with memory.high = L and memory.max = L + 64 MiB the hog is not killed for
# 5 s; report how far usage climbs above L per second and how fast the hog still progresses.
# timeout: 60
. /oomd/lib.sh
L=$((32 * MiB))
cg=$(mkcg h)
setknob "$cg" memory.high "$L"
setknob "$cg" memory.max "$((L + 64 * MiB))"
t0=$(now_ms)
start_hog "$cg" 256
wait_for 20000 above "$cg" "$L" || fail "usage did not reach L within 20 s ($(current "$cg") bytes)"
ta=$(now_ms); ua=$(current "$cg"); ka=$(hog_kb)
odt sleep 5000
tb=$(now_ms); ub=$(current "$cg"); kb=$(hog_kb)
k=$(evkey "$cg" oom_kill)
alive "$HOG_PID" || fail "hog died while throttled (oom_kill=$k, usage $(mib "$ub") MiB)"
[ "$k" -eq 0 ] || fail "oom_kill=$k while throttled"
dt=$((tb - ta))
pass "L=32MiB max=L+64MiB: reached L in $((ta - t0)) ms; over ${dt} ms usage" \
	"$(mib "$ua")->$(mib "$ub") MiB ($(awk -v a="$ua" -v b="$ub" -v t="$dt" 'BEGIN{printf "%.2f", (b-a)/1048576/(t/1000)}') MiB/s," \
	"$(mib $((ub - L))) MiB above L after 5 s); hog progress" \
	"$(awk -v a="$ka" -v b="$kb" -v t="$dt" 'BEGIN{printf "%.0f", (b-a)/(t/1000)}') KiB/s;" \
	"high events $(evkey "$cg" high), not killed"
