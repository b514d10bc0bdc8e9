# k-max-write-kills: while the hog is throttled above L (memory.high = L, memory.max = L + 64
# MiB), writing memory.max = L returns only after the kernel OOM-killed it.
# timeout: 60
. /oomd/lib.sh
L=$((32 * MiB))
cg=$(mkcg m)
setknob "$cg" memory.high "$L"
setknob "$cg" memory.max "$((L + 64 * MiB))"
start_hog "$cg" 256
wait_for 30000 above "$cg" $((L + 2 * MiB)) || fail "usage did not pass L+2MiB within 30 s ($(current "$cg") bytes)"
u0=$(current "$cg"); k0=$(evkey "$cg" oom_kill)
alive "$HOG_PID" || fail "hog died before the write"
ms=$(odt write "$cg/memory.max" "$L") || fail "write memory.max=L failed"
k1=$(evkey "$cg" oom_kill); u1=$(current "$cg")
[ "$k1" -gt "$k0" ] || fail "write of memory.max returned after $ms ms but oom_kill stayed $k0"
[ "$u1" -le "$L" ] || fail "usage $(mib "$u1") MiB > L right after the write"
wait_for 5000 dead "$HOG_PID" || fail "hog still alive 5 s after the write"
gone=$WAITED_MS
pass "usage $(mib "$u0") MiB (L+$(mib $((u0 - L)))) -> write memory.max=32MiB took $ms ms;" \
	"right after it: oom_kill $k0->$k1, usage $(mib "$u1") MiB; hog reaped ${gone} ms later"
