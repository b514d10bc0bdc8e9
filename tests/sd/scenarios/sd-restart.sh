#!/bin/sh
# sd-restart (issue 19, failure 2): `systemctl restart oomdelayfs`, the command docs/OPERATIONS.md
# gives, while the daemon holds a cgroup and two readers read through the shadow. systemd sends
# SIGTERM; the daemon asks systemd over D-Bus (daemon/sdjob.c), finds the restart job queued for
# its unit, stops serving, keeps the mount and the holds, exits 75; systemd starts it again with
# the kept connection once the unit's cgroup is empty.
# Nothing of ours may touch the mount while no server serves it: a child the daemon forked for
# the hand-over used to stay there in state D (fuse_do_getattr <- vfs_fstat) and the restart took
# 4 minutes (4 x TimeoutStopSec, "unclean termination").
# Asserts: `systemctl restart` returns and the same mount is served by a new main process within
# 5 s; no read begun after that fails, none hangs, the longest read under 3 s; the deadline
# unchanged, held until it, the kill on time; NRestarts unchanged (not a failure) and Result
# success; the daemon logged the hand-over for the restart job (and no hand-back, no failure to
# ask systemd); the unit's cgroup holds the new daemon and its charge zygote alone; no
# unclean termination, left-over process or time-out in the journal.
# Cgroup (in a Delegate=yes unit): h, L = 32M, T = 50 s (the set-up before the event must leave 25-45 s of it: sd_time_left), a hog held.
# Figures: the restart command's time, time until served (and from systemd's "Stopping" to the
# daemon's decision: the D-Bus question), the readers, the kill's lateness.
# timeout: 360
. /payload/lib.sh
sd_arm restart 50000 20000
old=$OLDPID nr0=$NR0
t0=$(now_ms)
systemctl restart oomdelayfs >/run/oomd-sd/restart.log 2>&1 || { cat /run/oomd-sd/restart.log; fail "systemctl restart oomdelayfs failed"; }
tcmd=$(($(now_ms) - t0))
sd_wait_served "$old" "$t0" "systemctl restart"
[ "$SERVED_MS" -lt 5000 ] || fail "served again only $SERVED_MS ms after systemctl restart began"
dead "$old" || fail "the old daemon (pid $old) is still alive"
tterm=$(sd_journal_at_ms '^SIGTERM in a restart job \(systemd: job [0-9]+ \(restart\), in [0-9]+ ms\): stopping for a successor')
tserve=$(sd_journal_at_ms '^serving .* on ')
[ -n "$tterm" ] && [ -n "$tserve" ] && [ "$tserve" -gt "$tterm" ] ||
	fail "no 'SIGTERM in a restart job' then 'serving' in the journal"
outage=$((tserve - tterm))
# how long systemd's SIGTERM took to become a decision (the D-Bus question; informational)
tstopping=$(sd_journal_at_ms '^Stopping ')
asked='?'
[ -n "$tstopping" ] && [ "$tterm" -ge "$tstopping" ] && asked=$((tterm - tstopping))
qms=$(sd_journal | jq -r 'select(.MESSAGE | type == "string" and test("^SIGTERM in a restart job")) | .MESSAGE' |
	tail -n 1 | sed -n 's/.*, in \([0-9]*\) ms).*/\1/p')
sd_reader_check "$SERVED_AT"
[ "$GAP_MS" -lt 3000 ] || fail "a read waited $GAP_MS ms across the restart"
sd_hold_check
[ "$(systemctl show -p NRestarts --value oomdelayfs)" = "$nr0" ] || fail "NRestarts moved: $(sd_show)"
[ "$(systemctl show -p Result --value oomdelayfs)" = success ] || fail "$(sd_show)"
[ -z "$(sd_journal_at_ms '^SIG(TERM|INT)[,:].*handing every cgroup back')" ] || fail "the daemon handed back in a restart (the journal below says why)"
sd_check_clean "$NEWPID"
shown=$(sd_show)
sd_leave_clean
pass "systemctl restart: returned after $tcmd ms, pid $NEWPID served the same mount ($MOUNT_ID) $SERVED_MS ms" \
	"after it began (the journal: systemd's 'Stopping' to the old server's 'SIGTERM in a restart job' $asked ms (the D-Bus question ${qms:-?} ms of it), to the new server's 'serving' $outage ms); readers: longest read $GAP_MS ms, failed $RFAILED (all before it served), none" \
	"hung; hold kept (deadline unchanged), the kernel's kill $KILL_LATE ms after the deadline; $shown;" \
	"the daemon's own hand-over on SIGTERM (restart job); the unit's cgroup: the daemon and its zygote alone; no unclean termination"
