# f-watchdog (issue 14, deliverable 5): the watchdog is fed from the thread that keeps
# deadlines, and a wedged daemon is restarted without losing the mount. A --supervise daemon
# with --watchdog-sec 3 (the supervisor plays systemd's WatchdogSec=: WATCHDOG_USEC and
# WATCHDOG_PID for the server, which sends WATCHDOG=1 while its deadline thread beats) stays
# idle (no hold, so no deadline wakes that thread) for 8 s: no watchdog kill. Then the server
# is frozen (SIGSTOP): the supervisor kills it within the period plus a margin, and a new
# server takes the connection over; the shadow tree answers again.
# Figures: watchdog kill time after the freeze, takeover time.
# timeout: 120
. /oomd/lib.sh
# /tmp/oomdelayfs.log is the whole boot's: f-fd-restart and f-listener-restart, earlier in it,
# end servers by the watchdog on purpose. Only this scenario's lines count.
wdcount() { _c=$(grep -c 'supervisor: watchdog: no WATCHDOG=1' /tmp/oomdelayfs.log 2>/dev/null); echo "${_c:-0}"; }
wd0=$(wdcount)
start_daemon /shadow --supervise --watchdog-sec 3
cg=$(mkcg w); s=/shadow${cg#$CGROOT}
setknob "$s" memory.max $((64 * MiB))
wait_for 10000 grep -q 'watchdog: WATCHDOG=1 every 1500 ms' /tmp/oomdelayfs.log || fail "the server did not start feeding the watchdog"
sp=$(server_pid) || fail "no server under the supervisor"
odt sleep 8000
[ "$(wdcount)" -gt "$wd0" ] && fail "the watchdog fired on an idle, healthy server: $(grep watchdog /tmp/oomdelayfs.log | tail -n 3)"
[ "$(server_pid)" = "$sp" ] || fail "the server changed while idle ($sp -> $(server_pid))"
n0=$(takeovers)
t0=$(now_ms)
kill -STOP "$sp"
wd() { [ "$(wdcount)" -gt "$wd0" ]; }
wait_for 10000 wd || fail "the watchdog did not fire within 10 s of the freeze"
tw=$(($(now_ms) - t0))
wait_for 15000 _took_over "$n0" || fail "no takeover after the watchdog kill"
tt=$(($(now_ms) - t0))
[ "$(cat "$s/memory.max")" = $((64 * MiB)) ] || fail "the shadow tree after the watchdog restart: $(cat "$s/memory.max" 2>&1)"
# it fires only after a whole period without WATCHDOG=1 (the last one came up to half a
# period before the freeze)
quiet=$(sed -n 's/.*no WATCHDOG=1 from server [0-9]* for \([0-9]*\) ms.*/\1/p' /tmp/oomdelayfs.log | tail -n 1)
[ -n "$quiet" ] && [ "$quiet" -ge 3000 ] || fail "the watchdog fired after only '$quiet' ms without WATCHDOG=1"
[ "$tw" -ge 1400 ] || fail "the watchdog fired $tw ms after the freeze: the server was fed half a period before at most"
stop_daemon
[ "$DAEMON_STOP" = term ] || fail "the supervisor did not stop on SIGTERM ($DAEMON_STOP)"
pass "idle 8 s without a watchdog kill; frozen server killed ${tw} ms after the freeze, ${quiet} ms after its last WATCHDOG=1 (period 3000 ms)," \
	"taken over at +${tt} ms, the shadow tree answers"
