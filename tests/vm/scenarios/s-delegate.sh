# s-delegate (issue 10, deliverable 2): in a cgroup delegated the cgroup-v2 way (directory,
# cgroup.procs, cgroup.threads, cgroup.subtree_control chowned to uid 1000; memory.max stays
# root's), uid 1000 cannot write memory.oom_control, memory.oom_delay_millisecs or the shadow's
# memory.max (EACCES, as for the real memory.max), and nothing changed (real memory.max/high,
# the shadow's oom_control and delay). The synthetic files show memory.max's owner and mode
# (ls -ln). The legitimate action beside works: the owner makes child cgroups through the shadow
# and moves a process between them through cgroup.procs. Once the admin chowns memory.max to the
# user, the user may write the delay and oom_control, and the rule works: a hold happens and the
# kernel's kill comes after the deadline, on time.
# timeout: 120
. /oomd/lib.sh
start_daemon /shadow
L=$((32 * MiB))
U=1000
cg=$(mkcg del); s=/shadow${cg#$CGROOT}
setknob "$s" memory.max "$L"
rmax=$(cat "$cg/memory.max"); rhigh=$(cat "$cg/memory.high")
delegate "$cg" "$U"
as() { odt asuser "$U" "$U" "$@"; }

# (b) the synthetic files show memory.max's attributes
for f in memory.oom_control memory.oom_delay_millisecs; do
	[ "$(lsattrs "$s/$f")" = "$(lsattrs "$cg/memory.max")" ] ||
		fail "$f shows '$(lsattrs "$s/$f")', the real memory.max is '$(lsattrs "$cg/memory.max")'"
done
[ "$(lsattrs "$s/memory.max")" = "$(lsattrs "$cg/memory.max")" ] || fail "the shadow's memory.max shows '$(lsattrs "$s/memory.max")'"
[ "$(lsattrs "$s/cgroup.event_control" | cut -d' ' -f1)" = "--w--w--w-" ] || fail "cgroup.event_control is $(lsattrs "$s/cgroup.event_control")"
b1="$(lsattrs "$s/memory.oom_control") as memory.max"

# (a) the attack: every write refused with the real memory.max's errno
write_denied "$U" "$cg/memory.max" $((96 * MiB)) # the kernel's answer for the real file, to compare with
write_denied "$U" "$s/memory.oom_control" 1
write_denied "$U" "$s/memory.oom_delay_millisecs" 60000
write_denied "$U" "$s/memory.max" $((96 * MiB))
# root of a user namespace whose ids are uid U's outside: no CAP_DAC_OVERRIDE over root's files
if odt asuser "$U" "$U" unshare -r true 2>/dev/null; then
	o=$(odt asuser "$U" "$U" unshare -r odt write "$s/memory.oom_control" 1 2>&1) &&
		fail "root of uid $U's user namespace wrote memory.oom_control ($o)"
	case $o in *"Permission denied"*) ;; *) fail "root of uid $U's user namespace: '$o', not EACCES" ;; esac
	uns="root of uid $U's user namespace refused too"
else
	uns="user namespaces not available to uid $U (not tried)"
fi
[ "$(cat "$cg/memory.max")" = "$rmax" ] || fail "real memory.max went from $rmax to $(cat "$cg/memory.max")"
[ "$(cat "$cg/memory.high")" = "$rhigh" ] || fail "real memory.high went from $rhigh to $(cat "$cg/memory.high")"
grep -q '^oom_kill_disable 0' "$s/memory.oom_control" || fail "oom_kill_disable changed: $(cat "$s/memory.oom_control")"
[ "$(cat "$s/memory.oom_delay_millisecs")" = 0 ] || fail "the delay changed to $(cat "$s/memory.oom_delay_millisecs")"
[ "$(cat "$s/memory.max")" = "$L" ] || fail "the shadow's memory.max reads $(cat "$s/memory.max")"

# the legitimate action beside it: child cgroups and a move between them, by the owner
as mkdir "$s/c1" "$s/c2" || fail "the owner cannot make child cgroups through the shadow"
[ "$(ls -lnd "$cg/c1" | awk '{print $3}')" = "$U" ] || fail "c1 is not the owner's: $(ls -lnd "$cg/c1")"
owner_moves "$U" "$cg" "$s"

# the admin delegates memory.max: the synthetic files follow, and the rule works for the user
chown "$U:$U" "$cg/memory.max" || fail "chown memory.max"
[ "$(lsattrs "$s/memory.oom_control")" = "$(lsattrs "$cg/memory.max")" ] ||
	fail "after chown memory.max: oom_control shows '$(lsattrs "$s/memory.oom_control")'"
b2="$(lsattrs "$s/memory.oom_control") after chown"
as odt write "$s/memory.oom_control" 0 >/dev/null || fail "uid $U cannot write oom_control after chown"
as odt write "$s/memory.oom_delay_millisecs" 1000 >/dev/null || fail "uid $U cannot write the delay after chown"
as odt write "$s/memory.max" "$L" >/dev/null || fail "uid $U cannot write the shadow's memory.max after chown"
[ "$(cat "$s/memory.oom_delay_millisecs")" = 1000 ] || fail "the delay reads $(cat "$s/memory.oom_delay_millisecs"), not 1000"

uoom() { grep -q '^under_oom 1' "$1/memory.oom_control"; }
k0=$(evkey "$cg" oom_kill)
kill_watch "$cg"
start_hog "$cg/c1" 256
wait_for 30000 uoom "$s" || fail "no hold within 30 s: $(hold_state "$cg" "$s")"
dlns=$(deadline_ns "$cg"); dl=$((dlns / 1000000))
held_until "$dl" "$cg" "$k0" "$HOG_PID"
wait_for 5000 dead "$HOG_PID" || fail "hog still alive 5 s after the deadline"
kl=$(kill_late "$cg" "$dlns")
stop_daemon
pass "uid $U refused (EACCES) on oom_control, delay and memory.max; $uns; real memory.max $rmax and high $rhigh unchanged;" \
	"files shown $b1, $b2; owner made c1, c2 and moved a pid; after chown memory.max: hold, kernel's kill $kl ms after the deadline"
