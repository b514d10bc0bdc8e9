# f-upgrade (issue 11, deliverables 1, 3 and 4): an upgrade in the middle of a hold. A
# --supervise daemon runs from a copy of the binary; while a cgroup is held, a different binary
# (the copy plus a marker, so another file and content) is renamed over that path, as dpkg does,
# and the supervisor gets SIGUSR2: the server exits 75 leaving the mount and the hold, the
# supervisor re-executes the new file, which starts the new server; that one takes the FUSE
# connection over. The deadline is kept (the kill within 50 ms of the original deadline, never
# before), nothing was handed back meanwhile (real memory.max = L + ceiling), the mount is the
# same (mount id) and a bind mount made before the upgrade still answers. SIGTERM then stops for
# good: handed back, unmounted, and the bind mount fails at once instead of hanging.
# Figures: upgrade time (SIGUSR2 to takeover), kill lateness vs the original deadline.
# timeout: 150
. /oomd/lib.sh
command -v pressure >/dev/null || skip "tests/vm/progs/pressure is not built"
[ -x /bin/oomdelayfs ] || skip "oomdelayfs is not built"
uoom() { grep -q '^under_oom 1' "$1/memory.oom_control"; }
mntid() { awk '$5 == "/shadow" && $9 ~ /^fuse/ { print $1 }' /proc/self/mountinfo; }
L=$((32 * MiB))
mkdir -p /tmp/od /tmp/bm /shadow
cp /bin/oomdelayfs /tmp/od/oomdelayfs
SHADOW=/shadow
# shellcheck disable=SC2086
/tmp/od/oomdelayfs $OOMD_DAEMON_ARGS --supervise /shadow >>/tmp/oomdelayfs.log 2>&1 &
DAEMON_PID=$!
wait_for 10000 _mounted /shadow || fail "the supervised daemon did not mount /shadow: $(tail -n 5 /tmp/oomdelayfs.log)"
m0=$(mntid)
cg=$(mkcg u); s=/shadow${cg#$CGROOT}
mount --bind "$s" /tmp/bm || fail "bind mount of $s"
setknob "$s" memory.max "$L"
setknob "$s" memory.oom_delay_millisecs 20000
start_hog "$cg" 200
H=$HOG_PID
wait_for 30000 uoom "$s" || fail "no hold within 30 s: $(hold_state "$cg" "$s")"
dl=$(deadline_ns "$cg")
pressure killwatch "$cg" "$dl" --timeout 60000 >/tmp/kw.u 2>&1 &
KW=$!
sp=$(server_pid) || fail "no server under the supervisor"
# the new binary: another file, other content, renamed over the path the supervisor runs
cp /tmp/od/oomdelayfs /tmp/od/oomdelayfs.new
echo "oomdelayfs upgrade marker $(now_ms)" >>/tmp/od/oomdelayfs.new
mv /tmp/od/oomdelayfs.new /tmp/od/oomdelayfs
ino=$(stat -L -c %i /tmp/od/oomdelayfs)
n0=$(takeovers)
tu=$(now_ms)
left=$(ms_left "$dl")
kill -USR2 "$DAEMON_PID"
wait_for 20000 _took_over "$n0" || fail "no server took the connection over within 20 s of SIGUSR2: $(tail -n 8 /tmp/oomdelayfs.log)"
tt=$(now_ms)
grep -q 'stopped; the mount and the holds are left to a successor' /tmp/oomdelayfs.log || fail "the old server did not stop for a successor"
grep -q 'supervisor: upgrade: executing /tmp/od/oomdelayfs' /tmp/oomdelayfs.log || fail "the supervisor did not re-execute its binary"
sp2=$(server_pid) || fail "no server after the upgrade"
[ "$sp2" != "$sp" ] || fail "the same server pid $sp after the upgrade"
[ "$(stat -L -c %i "/proc/$sp2/exe")" = "$ino" ] || fail "the new server does not run the new binary (inode $(stat -L -c %i "/proc/$sp2/exe"), want $ino)"
[ "$(stat -L -c %i "/proc/$DAEMON_PID/exe")" = "$ino" ] || fail "the supervisor does not run the new binary"
left2=$(ms_left "$dl")
[ "$left2" -gt 100 ] || fail "the upgrade took too long: $left2 ms left of the hold"
[ "$(cat "$cg/memory.max")" = $((L + 64 * MiB)) ] || fail "real memory.max $(cat "$cg/memory.max") after the upgrade: handed back?"
alive "$H" || fail "the hog died during the upgrade ($left2 ms before the deadline)"
[ "$(mntid)" = "$m0" ] || fail "/shadow is another mount after the upgrade ($m0 -> $(mntid))"
grep -q '^under_oom 1' /tmp/bm/memory.oom_control || fail "the bind mount made before the upgrade: $(cat /tmp/bm/memory.oom_control 2>&1)"
grep -q "adopted persisted state (a hold was running)" /tmp/oomdelayfs.log || fail "the new server did not adopt the hold"
wait "$KW" || fail "no kill within 60 s: $(cat /tmp/kw.u)"
read -r late _ _ _ </tmp/kw.u
wait_for 5000 dead "$H" || fail "hog alive 5 s after the kill"
kt=$(kill_times "$cg" "$dl"); issue=${kt% *}
awk -v l="$issue" 'BEGIN { exit !(l >= 0 && l <= 50) }' || fail "the new server's kill began $issue ms from the original deadline (want 0..50)"
awk -v l="$late" 'BEGIN { exit !(l >= 0) }' || fail "the kernel killed $late ms relative to the deadline: BEFORE it"
# the orderly stop ends the connection for the bind mount too
kill -TERM "$DAEMON_PID"
wait_for 10000 dead "$DAEMON_PID" || fail "the supervisor alive 10 s after SIGTERM"
wait "$DAEMON_PID"; rc=$?
DAEMON_PID=''
[ "$rc" = 0 ] || fail "the supervisor exited with $rc after SIGTERM"
_mounted /shadow && fail "/shadow still mounted after SIGTERM"
t0=$(now_ms)
cat /tmp/bm/memory.oom_control >/tmp/bm.out 2>&1 && fail "the bind mount still answers after the orderly stop"
tb=$(($(now_ms) - t0))
umount -l /tmp/bm
pass "SIGUSR2 $left ms before the deadline: new binary serving after $((tt - tu)) ms (same mount, bind mount" \
	"answered, hold kept, nothing handed back); the new server's kill began $issue ms after the original" \
	"deadline (kernel's OOM kill at +$late ms); SIGTERM: unmounted, the bind mount failed in $tb ms ($(cat /tmp/bm.out))"
