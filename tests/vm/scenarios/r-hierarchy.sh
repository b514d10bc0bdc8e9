# r-hierarchy: two children together exceed the parent's L; the parent's delay governs: both
# children read under_oom 1, nothing dies before the parent's deadline, then the kernel kills.
# timeout: 90
. /oomd/lib.sh
start_daemon /shadow
L=$((48 * MiB))
cg=$(mkcg h); s=/shadow${cg#$CGROOT}
setknob "$s" cgroup.subtree_control +memory
mkdir "$s/c1" "$s/c2" || fail "shadow mkdir children"
setknob "$s" memory.max "$L"
setknob "$s" memory.oom_delay_millisecs 1000
uoom() { grep -q '^under_oom 1' "$1/memory.oom_control"; }
k0=$(evkey "$cg" oom_kill)
kill_watch "$cg"
start_hog "$cg/c1" 32; p1=$HOG_PID
start_hog "$cg/c2" 32; p2=$HOG_PID
wait_for 30000 uoom "$s" || fail "no hold on the parent within 30 s"
# children first: a child at 0 while the parent still reads 1 breaks the rule; all at 0 means
# the hold ended before this shell got here (as in r-delay)
if uoom "$s/c1" && uoom "$s/c2"; then r12="both children read under_oom 1 during the hold"
elif uoom "$s"; then fail "children do not read under_oom 1 during the parent's hold"
else r12="children's under_oom not read in time (the hold ended first)"
fi
dlns=$(deadline_ns "$cg"); dl=$((dlns / 1000000))
held_until "$dl" "$cg" "$k0" "$p1" "$p2"
killed() { ! alive "$p1" || ! alive "$p2"; }
wait_for 5000 killed || fail "no child hog killed 5 s after the parent's deadline"
late=$(($(now_ms) - dl))
kl=$(kill_late "$cg" "$dlns")
k1=$(evkey "$cg" oom_kill)
stop_daemon
pass "parent L=48 MiB held both children ($r12); the kernel's first kill seen $kl ms after the deadline, a victim seen dead by this shell at +$late ms; oom_kill $k0->$k1"
