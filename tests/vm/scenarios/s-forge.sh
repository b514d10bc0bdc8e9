# s-forge (issue 10, deliverable 3): state no one can forge. The daemon keeps a cgroup's state
# in trusted.oomdelayfs.state, which only CAP_SYS_ADMIN can set.
# (a) uid 1000 owns a delegated cgroup (directory, cgroup.procs, cgroup.threads and
#     cgroup.subtree_control chowned; memory.max root's) whose L = 32 MiB and T = 3000 ms root set.
#     It sets user.oomdelayfs.state (the state's name before, which the owner of a directory can
#     set) to "limit=max ... disable=1 hold=1", and tries trusted.oomdelayfs.state (EPERM). The
#     daemon is SIGKILLed and started again: the forged attribute is logged and removed, the real
#     memory.max stays L + ceiling, T and D stay root's, and a hog is still held for T and killed.
# (b) root writes a trusted state whose L (256 MiB) is above what the real tree allows: it is
#     discarded at adoption with a log line; the real memory.max stays 32 MiB + ceiling.
# Figures: the daemon's kill relative to the deadline, the kernel's kill seen by a watcher.
# timeout: 150
. /oomd/lib.sh
command -v pressure >/dev/null || skip "tests/vm/progs/pressure is not built"
L=$((32 * MiB)) C=$((64 * MiB))
uoom() { grep -q '^under_oom 1' "$1/memory.oom_control"; }
start_daemon /shadow

# ---- set-up as root ----
cg=$(mkcg a); s=/shadow${cg#$CGROOT}
setknob "$s" memory.max "$L"
setknob "$s" memory.oom_delay_millisecs 3000
chown 1000:1000 "$cg" "$cg/cgroup.procs" "$cg/cgroup.threads" "$cg/cgroup.subtree_control" ||
	fail "cannot delegate $cg to uid 1000"
[ "$(cat "$cg/memory.max")" = $((L + C)) ] || fail "(a) real memory.max $(cat "$cg/memory.max"), not L + ceiling"
cg2=$(mkcg b); s2=/shadow${cg2#$CGROOT}
setknob "$s2" memory.max "$L"
setknob "$s2" memory.oom_delay_millisecs 3000
[ "$(cat "$cg2/memory.max")" = $((L + C)) ] || fail "(b) real memory.max $(cat "$cg2/memory.max"), not L + ceiling"
odt xattr get "$cg" trusted.oomdelayfs.state | grep -q "limit=$L .*delay=3000 " ||
	fail "(a) no trusted state with L and T: $(odt xattr get "$cg" trusted.oomdelayfs.state 2>&1)"

# ---- (a) the delegated owner's forgery ----
forged="oomdelayfs-state 1 limit=max high=max delay=0 disable=1 hold=1 spent=0 frozen=0 deadline=none gkills=0"
odt asuser 1000 1000 odt xattr set "$cg" user.oomdelayfs.state "$forged" 2>/tmp/sf.err ||
	fail "(a) uid 1000 cannot set user.* on its directory: $(cat /tmp/sf.err) (the attack's premise)"
odt asuser 1000 1000 odt xattr set "$cg" trusted.oomdelayfs.state "$forged" 2>/tmp/sf.err &&
	fail "(a) uid 1000 set trusted.oomdelayfs.state"
grep -q "Operation not permitted" /tmp/sf.err || fail "(a) uid 1000's trusted.* write: $(cat /tmp/sf.err), not EPERM"
# ---- (b) root's state with a larger L than the real tree allows ----
big=$((256 * MiB))
odt xattr set "$cg2" trusted.oomdelayfs.state \
	"oomdelayfs-state 1 limit=$big high=max delay=3000 disable=0 hold=0 spent=0 frozen=0 deadline=none gkills=0" ||
	fail "(b) root cannot set trusted.oomdelayfs.state"

kill_daemon
restart_daemon

# ---- after the restart ----
grep -F "$cg: ignoring user.oomdelayfs.state" /tmp/oomdelayfs.log | grep -q "removed" ||
	fail "(a) no log line for the forged user.oomdelayfs.state"
odt xattr get "$cg" user.oomdelayfs.state >/dev/null 2>&1 && fail "(a) the forged user.oomdelayfs.state is still there"
[ "$(cat "$cg/memory.max")" = $((L + C)) ] || fail "(a) real memory.max $(cat "$cg/memory.max") after the restart, not L + ceiling"
[ "$(cat "$s/memory.max")" = "$L" ] || fail "(a) shadow memory.max $(cat "$s/memory.max"), not L"
[ "$(cat "$s/memory.oom_delay_millisecs")" = 3000 ] || fail "(a) T $(cat "$s/memory.oom_delay_millisecs") after the restart, not root's 3000"
grep -q '^oom_kill_disable 0' "$s/memory.oom_control" || fail "(a) oom_kill_disable is not 0: $(tr '\n' ' ' <"$s/memory.oom_control")"
uoom "$s" && fail "(a) a hold came from the forged state"
grep -F "$cg2: persisted limit above the real memory.max" /tmp/oomdelayfs.log | grep -q "($big)" ||
	fail "(b) no log line for the discarded L: $(grep -F "$cg2" /tmp/oomdelayfs.log | tail -n 3)"
[ "$(cat "$cg2/memory.max")" = $((L + C)) ] || fail "(b) real memory.max $(cat "$cg2/memory.max"), not 32 MiB + ceiling"
[ "$(cat "$s2/memory.max")" = "$L" ] || fail "(b) shadow memory.max $(cat "$s2/memory.max"), not 32 MiB"
odt xattr get "$cg2" trusted.oomdelayfs.state | grep -q "limit=$L " ||
	fail "(b) the stored state still says: $(odt xattr get "$cg2" trusted.oomdelayfs.state)"

# ---- the legitimate behaviour beside it: a hog in (a) is held for T and killed ----
k0=$(evkey "$cg" oom_kill)
kill_watch "$cg"
start_hog "$cg" 200
wait_for 30000 uoom "$s" || fail "(a) no hold within 30 s: $(hold_state "$cg" "$s")"
dlns=$(deadline_ns "$cg"); dl=$((dlns / 1000000))
held_until "$dl" "$cg" "$k0" "$HOG_PID"
wait_for 5000 dead "$HOG_PID" || fail "(a) hog alive 5 s after the deadline"
k1=$(evkey "$cg" oom_kill)
[ "$k1" -gt "$k0" ] || fail "(a) the hog died but oom_kill did not move"
kl=$(kill_late "$cg" "$dlns")
kt=$(kill_times "$cg" "$dlns"); began=${kt% *}
awk -v l="$began" 'BEGIN { exit !(l >= 0 && l <= 100) }' || fail "(a) the daemon's kill began $began ms after the deadline (not within 0-100 ms)"
[ "$(cat "$cg/memory.max")" = "$L" ] || fail "(a) real memory.max $(cat "$cg/memory.max") after the kill, not L"
stop_daemon
pass "(a) uid 1000's user.oomdelayfs.state \"limit=max disable=1 hold=1\" logged and removed at the restart," \
	"its trusted.* write EPERM; real memory.max stayed 32 MiB + 64 MiB, T 3000 ms and D 0 root's; a hog" \
	"held and killed: the daemon's kill began $began ms after the deadline, the kernel's seen at +$kl ms" \
	"(oom_kill $k0->$k1); (b) root's trusted state with L = 256 MiB discarded with a log line, real" \
	"memory.max stayed 32 MiB + 64 MiB, state rewritten with L = 32 MiB"
