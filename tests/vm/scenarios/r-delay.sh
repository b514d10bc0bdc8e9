# r-delay (rules 2, 3, 9, 12): with memory.oom_delay_millisecs = 3000 a hog over L is held:
# under_oom becomes 1 (on its child too, where the hog runs), nothing is killed for >= 3000 ms (the real oom_kill
# counter is unchanged), the hog is killed right after, T then reads 0 and under_oom 0.
# Why 3000 and not 1000: this shell must see the hold while it lasts, and a CI-like run on 6.1
# (two TCG VMs on 2 busy host cores) held 1000 ms, killed on time, and its shell, polling with a
# fork per look, never read under_oom 1 in that second.
# Figures: detection latency (usage seen over L -> under_oom 1), kill time minus deadline.
# timeout: 90
. /oomd/lib.sh
start_daemon /shadow
L=$((32 * MiB))
cg=$(mkcg d); s=/shadow${cg#$CGROOT}
setknob "$s" cgroup.subtree_control +memory
mkdir "$s/w" || fail "shadow mkdir w"
setknob "$s" memory.max "$L"
T=3000
setknob "$s" memory.oom_delay_millisecs $T
[ "$(cat "$s/memory.max")" = "$L" ] || fail "shadow memory.max reads $(cat "$s/memory.max"), not L"
[ "$(cat "$cg/memory.max")" = $((L + 64 * MiB)) ] || fail "real memory.max is $(cat "$cg/memory.max"), not L + ceiling"
[ "$(cat "$cg/memory.high")" = "$L" ] || fail "real memory.high is $(cat "$cg/memory.high"), not L"
uoom() { grep -q '^under_oom 1' "$1/memory.oom_control"; }
k0=$(evkey "$cg" oom_kill)
kill_watch "$cg"
start_hog "$cg/w" 256
wait_for 30000 above "$cg" "$L" || fail "usage never passed L"
tc=$(now_ms)
wait_for 5000 uoom "$s" || fail "under_oom did not become 1 within 5 s of usage passing L"
tu=$(now_ms)
# rule 12, read child first: a child at 0 while its parent still reads 1 breaks it; both at 0
# means the hold ended before this shell got here (r-disable checks rule 12 without the race)
if uoom "$s/w"; then r12="child under_oom 1 during the hold"
elif uoom "$s"; then fail "under_oom of the child (where the hog runs) is 0 while its parent's hold lasts (rule 12)"
else r12="child under_oom not read in time (the hold ended first; rule 12 is checked in r-disable)"
fi
t=$(cat "$s/memory.oom_delay_millisecs")
[ "$t" = 0 ] || fail "T reads $t during the hold, not 0 (one-shot)"
dlns=$(deadline_ns "$cg"); dl=$((dlns / 1000000))
onset=$((dl - T))
held_until "$dl" "$cg" "$k0" "$HOG_PID"
wait_for 5000 dead "$HOG_PID" || fail "hog still alive 5 s after the deadline"
tk=$(now_ms)
k1=$(evkey "$cg" oom_kill)
[ "$k1" -gt "$k0" ] || fail "hog died but the kernel's oom_kill did not move"
kl=$(kill_late "$cg" "$dlns")
held=$((tk - onset)) # held_until above is the check that nothing died before the deadline
wait_for 2000 sh -c "! grep -q '^under_oom 1' $s/memory.oom_control" || fail "under_oom still 1 after the kill"
wait_for 3000 grep -q "^oom_kill [1-9]" "$s/w/memory.oom_control" || fail "shadow oom_kill of the child still 0 (rule 10): $(tr "\\n" " " <"$s/w/memory.oom_control")"
[ "$(cat "$s/memory.oom_delay_millisecs")" = 0 ] || fail "T not 0 after the hold"
[ "$(cat "$cg/memory.max")" = "$L" ] || fail "real memory.max $(cat "$cg/memory.max") after the hold, not L"
stop_daemon
pass "onset detected $((onset - tc)) ms after the shell saw usage > L (under_oom read at +$((tu - tc)) ms);" \
	"held $held ms; $r12; kernel's kill seen $kl ms after the deadline, hog seen dead by this shell at +$((tk - dl)) ms; oom_kill $k0->$k1"
