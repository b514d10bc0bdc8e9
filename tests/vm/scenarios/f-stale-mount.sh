# f-stale-mount (issue 5, deliverable 6): (1) clients blocked in the shadow tree when the daemon
# dies (a read stuck in a request the daemon never answers, because it was stopped with SIGSTOP
# and then SIGKILLed; a poll() on memory.oom_control) get an error, not a hang; (2) starting the
# daemon over the stale mount it left ("Transport endpoint is not connected") detaches it and
# mounts again; the shadow then works and /proc/mounts has one /shadow.
# Figures: time for the blocked clients to fail after the SIGKILL, restart time.
# timeout: 90
. /oomd/lib.sh
start_daemon /shadow
cg=$(mkcg s); s=/shadow${cg#$CGROOT}
setknob "$s" memory.max $((32 * MiB))
# a poll()er on memory.oom_control (blocked in poll until the daemon dies)
odt waitev "$s/memory.oom_control" under_oom --mode poll --timeout 30000 >/tmp/poll.out 2>&1 &
PP=$!
# it must be IN poll() when the daemon dies (not still opening or reading), or this part
# proves nothing about poll: x86_64 syscall numbers 7 (poll) and 271 (ppoll)
in_poll() { read -r _nr _ <"/proc/$PP/syscall" && { [ "$_nr" = 7 ] || [ "$_nr" = 271 ]; }; }
wait_for 10000 in_poll || fail "the poll()er is not blocked in poll() after 10 s (syscall: $(cat "/proc/$PP/syscall" 2>&1)): $(cat /tmp/poll.out)"
kill -STOP "$DAEMON_PID"
# a reader whose request the stopped daemon never answers
(cat "$s/memory.max" >/tmp/cat.out 2>&1; echo "rc=$?" >>/tmp/cat.out) &
CP=$!
usleep 1000000
alive "$CP" || fail "the reader finished while the daemon was stopped: $(cat /tmp/cat.out)"
t0=$(now_ms)
kill -KILL "$DAEMON_PID"
wait_for 5000 dead "$DAEMON_PID" || fail "daemon alive 5 s after SIGKILL"
wait "$DAEMON_PID" 2>/dev/null
wait_for 10000 dead "$CP" || fail "the blocked reader still hangs 10 s after the daemon died"
TC=$(($(now_ms) - t0))
grep -q 'rc=0' /tmp/cat.out && fail "the blocked reader succeeded after the daemon died?: $(cat /tmp/cat.out)"
wait_for 10000 dead "$PP" || fail "the poll()er still hangs 10 s after the daemon died"
TP=$(($(now_ms) - t0))
wait "$PP"; prc=$?
[ "$prc" != 0 ] || fail "the poll()er reported success after the daemon died: $(cat /tmp/poll.out)"
cerr=$(tr '\n' ' ' </tmp/cat.out)
perr=$(tr '\n' ' ' </tmp/poll.out)
# the stale mount
stat /shadow >/tmp/stat.out 2>&1 && fail "stat /shadow succeeded on the dead daemon's mount"
grep -q 'not connected' /tmp/stat.out || fail "stat /shadow: $(cat /tmp/stat.out), not ENOTCONN"
n0=$(grep -c 'serving ' /tmp/oomdelayfs.log)
t0=$(now_ms)
# shellcheck disable=SC2086
/bin/oomdelayfs $OOMD_DAEMON_ARGS /shadow >>/tmp/oomdelayfs.log 2>&1 &
DAEMON_PID=$!
wait_for 15000 _served "$n0" || fail "the daemon did not serve /shadow again within 15 s (over the stale mount)"
TR=$(($(now_ms) - t0))
grep -q 'stale FUSE mount' /tmp/oomdelayfs.log || fail "the daemon did not report the stale mount"
[ "$(cat "$s/memory.max")" = $((32 * MiB)) ] || fail "shadow memory.max reads '$(cat "$s/memory.max")' after the remount"
nm=$(awk '$2 == "/shadow"' /proc/mounts | wc -l)
[ "$nm" = 1 ] || fail "$nm mounts on /shadow after the remount (stale one not detached)"
stop_daemon
[ "$DAEMON_STOP" = term ] || fail "the remounted daemon did not stop on SIGTERM ($DAEMON_STOP)"
pass "blocked reader failed ${TC} ms after the SIGKILL (${cerr}), blocked poll()er ${TP} ms (${perr});" \
	"restart over the stale mount: detached and served again in ${TR} ms, one /shadow mount"
