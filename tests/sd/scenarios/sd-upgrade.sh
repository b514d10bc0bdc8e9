#!/bin/sh
# sd-upgrade (issue 19, failure 3): a package upgrade is the takeover. Version N installed and
# serving, a cgroup held and two readers reading through the shadow; then version N+1 installed
# with dpkg -i (what `apt install ./oomdelayfs_N+1.deb` runs). The package's maintainer scripts
# never stop the daemon (no hand-back, no unmount): the new postinst's `systemctl try-restart`
# is a restart job (systemd collapses try-restart of an active unit into one): the daemon's SIGTERM
# handler asks systemd, finds it, leaves the mount (exit 75) and systemd starts the NEW binary
# with the kept connection.
# N+1 is the payload's package repacked with a higher version (dpkg-deb -R, the control file's
# Version: N+sdup1, dpkg-deb -b): the VM builds nothing; dpkg replaces every file all the same,
# so the new server runs from the new /usr/bin/oomdelayfs (another inode than the old one's).
# Asserts: dpkg -i succeeds and lists N+1; the same mount served by a new main process whose
# executable is the new /usr/bin/oomdelayfs within 5 s of the old server's SIGTERM; no read
# begun after that fails, none hangs, the longest read under 3 s; the deadline unchanged, held
# until it, the kill on time; the old daemon logged the hand-over for the restart job (nothing
# handed back);
# Result success, NRestarts unchanged; the unit's cgroup holds the new daemon and its charge zygote alone; no unclean
# termination, left-over process or time-out in the journal. And issue 20: a v1 listener, a poll()
# waiter and open descriptors of h2 taken before the upgrade work after it (fdkeep, v1listener).
# Cgroup (in a Delegate=yes unit): h, L = 32M, T = 60 s (the set-up before the event must leave 25-45 s of it: sd_time_left), a hog held.
# timeout: 420
. /payload/lib.sh
_grew() { [ "$(grep -c '^signal' "$1")" -gt "$2" ]; } # _grew FILE N: more than N signal lines
v0=$(dpkg-deb -f "$(sd_deb)" Version)
v1=${v0}+sdup1
up=/run/oomd-sd/upgrade
rm -rf "$up" && mkdir -p "$up"
dpkg-deb -R "$(sd_deb)" "$up/root" || fail "dpkg-deb -R failed"
sed -i "s/^Version: .*/Version: $v1/" "$up/root/DEBIAN/control"
dpkg-deb -b "$up/root" "$up/oomdelayfs_${v1}_amd64.deb" >/dev/null || fail "dpkg-deb -b failed"
rm -rf "$up/root"

sd_arm upgrade 60000 30000
# issue 20 across the package's upgrade: h2 (L = 32M, T = 500 ms) has a v1 listener (eventfd +
# cgroup.event_control) and fdkeep's descriptors (real, virtualised and synthetic files, a
# directory, a poll() waiter on memory.oom_control), all taken from the old server
H2=$(mkcg "$(dirname "$HCG")" h2)
s2=$(shadow_of "$H2")
echo $((32 * MiB)) >"$s2/memory.max" || fail "cannot write h2's memory.max through the shadow"
echo 500 >"$s2/memory.oom_delay_millisecs" || fail "cannot write h2's T through the shadow"
fk=/run/oomd-sd/fdkeep
rm -rf "$fk" && mkdir -p "$fk"
v1listener "$s2" --timeout 400000 --ready "$fk/listener.ready" >"$fk/listener.out" 2>&1 &
LPID=$!
fdkeep "$s2" "$fk" 1 >"$fk/fdkeep.out" 2>&1 &
FPID=$!
wait_for 10000 test -e "$fk/listener.ready" -a -e "$fk/ready.0" ||
	fail "h2's listener or fdkeep did not start: $(cat "$fk/listener.out" "$fk/fdkeep.out" | tr '\n' ' ')"
[ "$(dpkg-query -W -f '${Version}' oomdelayfs)" = "$v0" ] || fail "dpkg lists $(dpkg-query -W -f '${Version}' oomdelayfs), not $v0"
ino0=$(stat -c %i /usr/bin/oomdelayfs)
old=$OLDPID nr0=$NR0
t0=$(now_ms)
dpkg -i "$up/oomdelayfs_${v1}_amd64.deb" >/run/oomd-sd/dpkg-up.log 2>&1 || { cat /run/oomd-sd/dpkg-up.log; fail "dpkg -i of $v1 failed"; }
tdpkg=$(($(now_ms) - t0))
sd_wait_served "$old" "$t0" "the upgrade"
tterm=$(sd_journal_at_ms '^SIGTERM in a restart job \(systemd: job [0-9]+ \((try-)?restart\), in [0-9]+ ms\): stopping for a successor')
[ -n "$tterm" ] || fail "the old daemon did not hand over for a restart job in the upgrade (the journal below says why)"
[ -z "$(sd_journal_at_ms '^SIG(TERM|INT)[,:].*handing every cgroup back')" ] || fail "the upgrade stopped the daemon (hand-back)"
# dpkg -i returns after the postinst's restart: the journal dates the new server's "serving"
tserve=$(sd_journal_at_ms '^serving .* on ')
[ -n "$tserve" ] && [ "$tserve" -gt "$tterm" ] || fail "no 'serving' line of the new server after the old one's SIGTERM in the journal"
served=$((tserve - tterm))
[ "$served" -lt 5000 ] || fail "served again only $served ms after the old server's SIGTERM"
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
# h2: every descriptor opened under the old server works under the new one; an onset now is
# heard by the listener and by the poll() waiter registered with the old server
touch "$fk/go.1"
wait_for 10000 test -e "$fk/ready.1" || fail "fdkeep's round after the upgrade did not end: $(cat "$fk/fdkeep.out" | tr '\n' ' ')"
grep -q '^round 1 ok' "$fk/fdkeep.out" || fail "descriptors opened before the upgrade failed after it: $(cat "$fk/fdkeep.out" | tr '\n' ' ')"
n0=$(grep -c '^signal' "$fk/listener.out")
k2=$(evkey "$H2" oom_kill)
start_hog "$H2" 200
wait_for 20000 _grew "$fk/listener.out" "$n0" || fail "h2's listener (registered before the upgrade) heard no onset after it: $(cat "$fk/listener.out" | tr '\n' ' ')"
wait_for 10000 grep -q '^pollpri' "$fk/fdkeep.out" || fail "the poll() waiter begun before the upgrade was not woken by the onset: $(cat "$fk/fdkeep.out" | tr '\n' ' ')"
wait_for 15000 dead "$HOG_PID" || fail "h2's hog not killed after its 500 ms delay"
[ "$(evkey "$H2" oom_kill)" -gt "$k2" ] || fail "h2's hog died without the kernel's oom_kill"
kill "$LPID" "$FPID" 2>/dev/null
[ "$(systemctl show -p NRestarts --value oomdelayfs)" = "$nr0" ] || fail "NRestarts moved: $(sd_show)"
[ "$(systemctl show -p Result --value oomdelayfs)" = success ] || fail "$(sd_show)"
sd_check_clean "$NEWPID"
shown=$(sd_show)
sd_leave_clean
pass "dpkg -i $v0 -> $v1: $tdpkg ms; pid $NEWPID (the new /usr/bin/oomdelayfs, inode $ino0 -> $ino1)" \
	"served the same mount ($MOUNT_ID) $served ms after the old server's SIGTERM in the restart job (journal); readers: longest read $GAP_MS ms, failed $RFAILED (all before it served), none hung;" \
	"hold kept (deadline unchanged), the kernel's kill $KILL_LATE ms after the deadline; $shown;" \
	"nothing handed back; the unit's cgroup: the daemon and its zygote alone; no unclean termination;" \
	"h2: a v1 listener, a poll() waiter and 8 descriptors opened before the upgrade all work after it"
