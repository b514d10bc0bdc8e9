# r-raise (rule 5): a handler raises memory.max through the shadow tree during the delay:
# no kill, the hog finishes, under_oom returns to 0.
# timeout: 90
. /oomd/lib.sh
start_daemon /shadow
L=$((32 * MiB))
cg=$(mkcg r); s=/shadow${cg#$CGROOT}
setknob "$s" memory.max "$L"
setknob "$s" memory.oom_delay_millisecs 30000 # the hold ends at the action, not the deadline
k0=$(evkey "$cg" oom_kill)
start_hog "$cg" 48 --exit
uoom() { grep -q '^under_oom 1' "$1/memory.oom_control"; }
wait_for 30000 uoom "$s" || fail "no hold within 30 s: $(hold_state "$cg" "$s")"
t0=$(now_ms)
setknob "$s" memory.max $((96 * MiB))
traise=$(($(now_ms) - t0))
wait_for 3000 sh -c "! grep -q '^under_oom 1' $s/memory.oom_control" || fail "under_oom still 1 3 s after raising L"
tend=$(($(now_ms) - t0))
wait "$HOG_PID"; rc=$?
[ "$rc" = 0 ] || fail "hog exited $rc, not 0 (killed?)"
[ "$(evkey "$cg" oom_kill)" = "$k0" ] || fail "oom_kill moved"
[ "$(cat "$s/memory.max")" = $((96 * MiB)) ] || fail "shadow memory.max $(cat "$s/memory.max") after the raise"
[ "$(cat "$cg/memory.max")" = $((96 * MiB)) ] || fail "real memory.max $(cat "$cg/memory.max") after the hold, not the new L"
stop_daemon
pass "raise took ${traise} ms; hold ended ${tend} ms after the raise; hog finished 48 MiB, oom_kill unchanged ($k0)"
