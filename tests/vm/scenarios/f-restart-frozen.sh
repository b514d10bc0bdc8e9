# f-restart-frozen (issue 5, deliverables 3 and 4): a held cgroup that the daemon froze (small
# --freeze-margin) is left frozen by a SIGKILL of the daemon; its deadline passes while the
# daemon is dead. Started again, the daemon finishes the hold: the kill comes, the cgroup is
# thawed, real memory.max = L and the persisted state is gone (T consumed, D = 0).
# Figures: time from the restart to the kill and to the thaw.
# timeout: 120
. /oomd/lib.sh
command -v pressure >/dev/null || skip "tests/vm/progs/pressure is not built"
uoom() { grep -q '^under_oom 1' "$1/memory.oom_control"; }
thawed() { grep -q '^frozen 0' "$1/cgroup.events"; }
L=$((32 * MiB))
start_daemon /shadow --freeze-margin 1M
cg=$(mkcg z); s=/shadow${cg#$CGROOT}
setknob "$s" memory.max "$L"
setknob "$s" memory.oom_delay_millisecs 8000
k0=$(evkey "$cg" oom_kill)
start_hog "$cg" 200
wait_for 30000 uoom "$s" || fail "no hold within 30 s: $(hold_state "$cg" "$s")"
wait_for 7000 frozen "$cg" || fail "the held cgroup was not frozen within 7 s (freeze margin 1M); usage $(mib "$(current "$cg")") MiB"
odt xattr get "$cg" trusted.oomdelayfs.state | grep -q 'frozen=1' || fail "persisted state does not say frozen: $(odt xattr get "$cg" trusted.oomdelayfs.state)"
dl=$(deadline_ns "$cg")
kill_daemon
left=$(ms_left "$dl")
[ "$left" -gt 0 ] || fail "set-up too slow: the daemon was SIGKILLed $((-left)) ms after the deadline"
pressure killwatch "$cg" "$dl" --timeout 30000 >/tmp/kw.z 2>&1 &
KW=$!
odt sleep $(( $(ms_left "$dl") + 1000 ))
frozen "$cg" || fail "the cgroup thawed while the daemon was dead (nobody should have)"
alive "$HOG_PID" || fail "hog died while the daemon was dead"
tr=$(pressure now)
restart_daemon --freeze-margin 1M
wait "$KW" || fail "no kill within 30 s of the restart: $(cat /tmp/kw.z)"
read -r _ _ _ tk </tmp/kw.z
wait_for 5000 thawed "$cg" || fail "still frozen 5 s after the kill"
tt=$(pressure now)
wait_for 5000 dead "$HOG_PID" || fail "hog alive 5 s after the kill"
[ "$(cat "$cg/memory.max")" = "$L" ] || fail "real memory.max $(cat "$cg/memory.max") after the hold, not L"
[ "$(cat "$s/memory.oom_delay_millisecs")" = 0 ] || fail "T not 0 after the hold"
odt xattr get "$cg" trusted.oomdelayfs.state >/dev/null 2>&1 && fail "state still persisted after the hold ended: $(odt xattr get "$cg" trusted.oomdelayfs.state)"
stop_daemon
pass "frozen cgroup, SIGKILL ${left} ms before the deadline, which passed while dead: killed $(awk -v a="$tk" -v b="$tr" 'BEGIN{printf "%.1f", a-b}') ms" \
	"after the restart began, thaw seen by +$(awk -v a="$tt" -v b="$tr" 'BEGIN{printf "%.1f", a-b}') ms; memory.max = L, state removed"
