# f-inflight (issue 11, deliverables 2 and 4): 16 readers in tight loops (open, read, close of
# memory.oom_control in the shadow tree) while the server of a --supervise daemon is stopped
# (SIGSTOP, so that its workers hold requests they have read and not answered) and then
# SIGKILLed; the supervisor starts a server that takes the connection over. Counts the
# operations answered, failed (by call and errno) and hung (not returned 10 s after the
# readers stopped). None may hang, and no operation begun after the takeover may fail.
# On Linux 6.9+ the new server sends FUSE_NOTIFY_RESEND and the kernel re-queues what the dead
# server had read; before that the kernel fails those requests (ECONNABORTED) when the dead
# server's cloned descriptors close. No operation may fail with ESTALE: a descriptor the dead
# server opened is opened again by its successor (issue 20). Beside them a poll() on
# memory.oom_control, blocked in poll() at the crash, waits for a wake-up the dead server owed:
# the new server wakes it (every pending poll handle is carried with the connection), its next
# poll on the same descriptor waits again, and it returns when the file changes: an OOM onset
# after the takeover.
# Figures: the counts, the errors, the slowest operation, when the poll()er returned.
# timeout: 120
. /oomd/lib.sh
command -v inflight >/dev/null || skip "tests/vm/progs/inflight is not built"
start_daemon /shadow --supervise
cg=$(mkcg i); s=/shadow${cg#$CGROOT}
setknob "$s" memory.max $((64 * MiB))
odt waitev "$s/memory.oom_control" under_oom --mode poll --timeout 60000 >/tmp/poll.out 2>&1 &
PP=$!
# x86_64 syscall numbers 7 (poll) and 271 (ppoll)
in_poll() { read -r _nr _ <"/proc/$PP/syscall" && { [ "$_nr" = 7 ] || [ "$_nr" = 271 ]; }; }
wait_for 10000 in_poll || fail "the poll()er is not blocked in poll() after 10 s: $(cat /tmp/poll.out)"
inflight "$s/memory.oom_control" 16 9000 10000 >/tmp/inflight.out 2>&1 &
IP=$!
usleep 2000000
sp=$(server_pid) || fail "no server under the supervisor $DAEMON_PID"
n0=$(takeovers)
kill -STOP "$sp"
usleep 300000
tk=$(now_ms)
kill -KILL "$sp"
wait_for 15000 _took_over "$n0" || fail "no server took the connection over within 15 s of the SIGKILL"
ts=$(now_ms)
wait "$IP"
woke=$(grep 'woke [0-9]* poll() waiters' /tmp/oomdelayfs.log | tail -n 1 | sed -n 's/.*woke \([0-9]*\) poll.*/\1/p')
[ -n "$woke" ] || fail "the successor woke no poll() waiter"
alive "$PP" || fail "the poll()er returned without a change of its file: $(cat /tmp/poll.out)"
# the same descriptor goes on working: the next change of the file wakes it
setknob "$s" memory.oom_delay_millisecs 2000
to=$(now_ms)
start_hog "$cg" 256
wait_for 15000 dead "$PP" || fail "the poll()er did not wake at the OOM onset after the takeover ($(hold_state "$cg" "$s"))"
tp=$(($(now_ms) - to))
wait "$PP"; prc=$?
pout=$(tr '\n' ' ' </tmp/poll.out)
[ "$prc" = 0 ] || fail "the poll()er, woken at the onset: $pout"
wait_for 10000 dead "$HOG_PID" || fail "the hog outlived its hold"
cat /tmp/inflight.out
grep -q '^ops=' /tmp/inflight.out || fail "inflight printed no counts: $(cat /tmp/inflight.out)"
line=$(cat /tmp/inflight.out)
val() { echo "$line" | sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p"; }
ops=$(val ops) ok=$(val ok) nf=$(val failed) hung=$(val hung) slow=$(val slowest_ms)
lfs=$(val last_failed_start) errs=$(val errors)
resend=no
grep -q 're-queued by FUSE_NOTIFY_RESEND' /tmp/oomdelayfs.log && resend=yes
[ "$hung" = 0 ] || fail "$hung readers hung (resend: $resend): $line"
[ "$lfs" -lt "$ts" ] || fail "an operation begun $((lfs - ts)) ms after the takeover failed: $line"
[ "$ok" -gt 0 ] || fail "no operation succeeded: $line"
case "$errs" in *ESTALE*) fail "ESTALE after the takeover (an open of the dead server not reopened): $line" ;; esac
# after the takeover the readers must have gone on (not just finished what was queued)
[ "$ops" -gt $((nf + 100)) ] || fail "too few operations: $line"
stop_daemon
[ "$DAEMON_STOP" = term ] || fail "the supervisor did not stop on SIGTERM ($DAEMON_STOP)"
pass "16 readers across SIGSTOP + SIGKILL (takeover $((ts - tk)) ms after the kill, FUSE_NOTIFY_RESEND: $resend):" \
	"$ops operations, $ok answered, $nf failed (${errs:-none}), $hung hung; slowest ${slow} ms;" \
	"the poll()er blocked across the crash was woken (the successor woke $woke), waited on, and returned ${tp} ms after the hog started ($pout)"
