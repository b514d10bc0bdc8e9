# k-frozen-max-write: the design's kill path after a freeze: with the hog frozen above L,
# writing memory.max = L returns after the kernel OOM-killed the (frozen) hog.
# timeout: 60
. /oomd/lib.sh
L=$((32 * MiB))
cg=$(mkcg z)
setknob "$cg" memory.high "$L"
setknob "$cg" memory.max "$((L + 64 * MiB))"
start_hog "$cg" 256
wait_for 30000 above "$cg" $((L + 2 * MiB)) || fail "usage did not pass L+2MiB within 30 s"
setknob "$cg" cgroup.freeze 1
wait_for 5000 frozen "$cg" || fail "not frozen within 5 s"
u0=$(current "$cg"); k0=$(evkey "$cg" oom_kill)
ms=$(odt write "$cg/memory.max" "$L") || fail "write memory.max=L on the frozen cgroup failed"
k1=$(evkey "$cg" oom_kill); u1=$(current "$cg")
[ "$k1" -gt "$k0" ] || fail "write returned after $ms ms but oom_kill stayed $k0"
[ "$u1" -le "$L" ] || fail "usage $(mib "$u1") MiB > L right after the write"
wait_for 5000 dead "$HOG_PID" || fail "frozen hog still alive 5 s after the write"
pass "frozen at $(mib "$u0") MiB; write memory.max=32MiB took $ms ms; oom_kill $k0->$k1," \
	"usage $(mib "$u1") MiB right after; hog reaped ${WAITED_MS} ms later; still frozen: $(frozen "$cg" && echo yes || echo no)"
