# r-rearm (rule 6): writing memory.oom_delay_millisecs during a hold restarts its wait with the
# new value; writing 0 during a hold kills at once.
# timeout: 90
. /oomd/lib.sh
start_daemon /shadow
L=$((32 * MiB))
uoom() { grep -q '^under_oom 1' "$1/memory.oom_control"; }
cg=$(mkcg a); s=/shadow${cg#$CGROOT}
setknob "$s" memory.max "$L"
setknob "$s" memory.oom_delay_millisecs 4000
ka=$(evkey "$cg" oom_kill)
kill_watch "$cg"
start_hog "$cg" 256
wait_for 30000 uoom "$s" || fail "no hold within 30 s: $(hold_state "$cg" "$s")"
d1=$(deadline_ms "$cg")
# re-arm 2000 ms into the hold (timed from the daemon's deadline, not from when this shell
# noticed the hold: under a loaded host that was seen 1.4 s late in CI)
w=$((d1 - 2000 - $(now_ms)))
[ "$w" -gt 0 ] || fail "the shell saw the hold $((-w)) ms after the point it should re-arm at (host too loaded)"
odt sleep "$w"
tw=$(now_ms)
setknob "$s" memory.oom_delay_millisecs 3000
tw2=$(now_ms) # the write landed somewhere in [tw, tw2]
[ "$tw2" -lt "$d1" ] || fail "the re-arm write returned $((tw2 - d1)) ms after the old deadline (host too loaded)"
_new_deadline() { _d=$(deadline_ms "$cg"); [ "$_d" != "$d1" ]; }
wait_for 3000 _new_deadline || fail "the deadline did not move within 3 s of the re-arm (still $d1)"
d2ns=$(deadline_ns "$cg"); d2=$((d2ns / 1000000))
[ $((d2 - tw)) -ge 2950 ] && [ $((d2 - tw2)) -le 3050 ] ||
	fail "new deadline $((d2 - tw)) ms after the re-arm write began, $((d2 - tw2)) ms after it returned: not 3000"
held_until "$d2" "$cg" "$ka" "$HOG_PID"
wait_for 5000 dead "$HOG_PID" || fail "hog alive 5 s after the re-armed deadline"
late=$(($(now_ms) - d2))
kl=$(kill_late "$cg" "$d2ns") # not before the NEW deadline: the old one was really replaced
# re-arm with 0: kill now
cg=$(mkcg b); s=/shadow${cg#$CGROOT}
setknob "$s" memory.max "$L"
setknob "$s" memory.oom_delay_millisecs 60000
start_hog "$cg" 256
wait_for 30000 uoom "$s" || fail "no second hold within 30 s"
t0=$(now_ms)
setknob "$s" memory.oom_delay_millisecs 0
wait_for 5000 dead "$HOG_PID" || fail "re-arm with 0 did not kill within 5 s"
k0=$(($(now_ms) - t0))
stop_daemon
pass "re-arm at +2000 ms (of T = 4000) with 3000 (the write took $((tw2 - tw)) ms): the kernel's kill seen $kl ms after the new deadline, the hog seen dead at +$late ms ($((d2 - d1)) ms after the old); re-arm with 0 killed in $k0 ms"
