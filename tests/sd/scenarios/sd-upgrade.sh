#!/bin/sh
# sd-upgrade (issue 19, failure 3): a package upgrade is the takeover. Version N installed and
# serving, a cgroup held and two readers reading through the shadow; then version N+1 installed
# with dpkg -i (what `apt install ./oomdelayfs_N+1.deb` runs). The package's maintainer scripts
# never stop the daemon (no hand-back, no unmount): the new postinst's `systemctl try-restart`
# makes oomdelayfs-stop send SIGUSR2 and systemd starts the NEW binary with the kept connection.
# N+1 is the payload's package repacked with a higher version (dpkg-deb -R, the control file's
# Version: N+sdup1, dpkg-deb -b): the VM builds nothing; dpkg replaces every file all the same,
# so the new server runs from the new /usr/bin/oomdelayfs (another inode than the old one's).
# Asserts: dpkg -i succeeds and lists N+1; the same mount served by a new main process whose
# executable is the new /usr/bin/oomdelayfs within 5 s of the old server's SIGUSR2; no read
# begun after that fails, none hangs, the longest read under 3 s; the deadline unchanged, held
# until it, the kill on time; oomdelayfs-stop chose SIGUSR2 (no SIGTERM: nothing handed back);
# Result success, NRestarts unchanged; the unit's cgroup holds the new daemon alone; no unclean
# termination, left-over process or time-out in the journal.
# Cgroup (in a Delegate=yes unit): h, L = 32M, T = 120 s (TCG under load), a hog held.
# timeout: 420
. /payload/lib.sh
v0=$(dpkg-deb -f "$(sd_deb)" Version)
v1=${v0}+sdup1
up=/run/oomd-sd/upgrade
rm -rf "$up" && mkdir -p "$up"
dpkg-deb -R "$(sd_deb)" "$up/root" || fail "dpkg-deb -R failed"
sed -i "s/^Version: .*/Version: $v1/" "$up/root/DEBIAN/control"
dpkg-deb -b "$up/root" "$up/oomdelayfs_${v1}_amd64.deb" >/dev/null || fail "dpkg-deb -b failed"
rm -rf "$up/root"

sd_arm upgrade 120000 30000
[ "$(dpkg-query -W -f '${Version}' oomdelayfs)" = "$v0" ] || fail "dpkg lists $(dpkg-query -W -f '${Version}' oomdelayfs), not $v0"
ino0=$(stat -c %i /usr/bin/oomdelayfs)
old=$OLDPID nr0=$NR0
t0=$(now_ms)
dpkg -i "$up/oomdelayfs_${v1}_amd64.deb" >/run/oomd-sd/dpkg-up.log 2>&1 || { cat /run/oomd-sd/dpkg-up.log; fail "dpkg -i of $v1 failed"; }
tdpkg=$(($(now_ms) - t0))
sd_wait_served "$old" "$t0" "the upgrade"
tusr2=$(sd_journal_at_ms '^oomdelayfs-stop: SIGUSR2 to')
[ -n "$tusr2" ] || fail "oomdelayfs-stop did not send SIGUSR2 in the upgrade"
[ -z "$(sd_journal_at_ms '^oomdelayfs-stop: SIGTERM to')" ] || fail "the upgrade stopped the daemon (SIGTERM: hand-back)"
# dpkg -i returns after the postinst's restart: the journal dates the new server's "serving"
tserve=$(sd_journal_at_ms '^serving .* on ')
[ -n "$tserve" ] && [ "$tserve" -gt "$tusr2" ] || fail "no 'serving' line of the new server after the SIGUSR2 in the journal"
served=$((tserve - tusr2))
[ "$served" -lt 5000 ] || fail "served again only $served ms after the old server's SIGUSR2"
[ "$(dpkg-query -W -f '${Version}' oomdelayfs)" = "$v1" ] || fail "dpkg lists $(dpkg-query -W -f '${Version}' oomdelayfs), not $v1"
ino1=$(stat -c %i /usr/bin/oomdelayfs)
[ "$ino1" != "$ino0" ] || fail "dpkg did not replace /usr/bin/oomdelayfs (inode $ino0)"
exe=$(readlink "/proc/$NEWPID/exe")
[ "$exe" = /usr/bin/oomdelayfs ] && [ "$(stat -L -c %i "/proc/$NEWPID/exe")" = "$ino1" ] ||
	fail "the new server (pid $NEWPID) runs $exe (inode $(stat -L -c %i "/proc/$NEWPID/exe")), not the new /usr/bin/oomdelayfs (inode $ino1)"
dead "$old" || fail "the old daemon (pid $old) is still alive"
sd_reader_check "$SERVED_AT"
[ "$GAP_MS" -lt 3000 ] || fail "a read waited $GAP_MS ms across the upgrade"
sd_hold_check
[ "$(systemctl show -p NRestarts --value oomdelayfs)" = "$nr0" ] || fail "NRestarts moved: $(sd_show)"
[ "$(systemctl show -p Result --value oomdelayfs)" = success ] || fail "$(sd_show)"
sd_check_clean "$NEWPID"
shown=$(sd_show)
sd_leave_clean
pass "dpkg -i $v0 -> $v1: $tdpkg ms; pid $NEWPID (the new /usr/bin/oomdelayfs, inode $ino0 -> $ino1)" \
	"served the same mount ($MOUNT_ID) $served ms after the old server's SIGUSR2 (journal); readers: longest read $GAP_MS ms, failed $RFAILED (all before it served), none hung;" \
	"hold kept (deadline unchanged), the kernel's kill $KILL_LATE ms after the deadline; $shown;" \
	"no SIGTERM (nothing handed back); the unit's cgroup: the daemon alone; no unclean termination"
