#!/bin/sh
# sd-crash (issue 19, failure 1): the daemon SIGKILLed while it holds a cgroup and two readers
# read through the shadow. systemd (Restart=on-failure) starts it again with the FUSE connection
# from the unit's file descriptor store: nothing in the start path may touch the kept mount
# before the new server serves it (an ExecStartPre= `mkdir -p` of the mount point hung there).
# Asserts: the same mount served by a new main process within 5 s of the SIGKILL; no read begun
# after that fails, none hangs, the longest read under 3 s; the hold's persisted deadline
# unchanged, h held until it and the kernel's kill on time; NRestarts one more; the unit's
# cgroup holds the new daemon and its charge zygote alone; no "unclean termination", left-over
# process or time-out in the journal.
# Cgroup (in a Delegate=yes unit): h, L = 32M, T = 50 s (the set-up before the event must leave 25-45 s of it: sd_time_left), a hog held.
# Figures: time until served, the readers' longest read and failures (all before the restart
# served), the kill's lateness, NRestarts and Result.
# timeout: 360
. /payload/lib.sh
sd_arm crash 50000 20000
old=$OLDPID nr0=$NR0
t0=$(now_ms)
kill -KILL "$old" || fail "kill -KILL $old failed"
sd_wait_served "$old" "$t0" "SIGKILL"
[ "$SERVED_MS" -lt 5000 ] || fail "served again only $SERVED_MS ms after the SIGKILL"
sd_reader_check "$SERVED_AT"
[ "$GAP_MS" -lt 3000 ] || fail "a read waited $GAP_MS ms across the crash"
sd_hold_check
nr1=$(systemctl show -p NRestarts --value oomdelayfs)
[ "$nr1" = $((nr0 + 1)) ] || fail "NRestarts $nr0 -> $nr1, not one more"
sd_check_clean "$NEWPID"
shown=$(sd_show)
sd_leave_clean
pass "SIGKILL of pid $old: pid $NEWPID served the same mount ($MOUNT_ID) after $SERVED_MS ms;" \
	"readers: longest read $GAP_MS ms, failed $RFAILED (all begun before it served), none hung;" \
	"hold kept (deadline unchanged), the kernel's kill $KILL_LATE ms after the deadline; $shown;" \
	"the unit's cgroup: the daemon and its zygote alone; no unclean termination"
