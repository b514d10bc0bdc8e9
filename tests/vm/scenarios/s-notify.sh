# s-notify (issue 21, item 1): the service manager's channel. Before, `--supervise` listened
# on an abstract socket (@oomdelayfs-supervisor/<pid>) anyone in the network namespace could
# send to: uid 1000 sent it a lingering TCP socket by SCM_RIGHTS, the supervisor blocked in
# close() on it, its queue filled, the server's next sd_notify (libsystemd: a blocking
# sendmsg, from the main loop) blocked, and with it the watcher: a hog over L lived 5 s and
# more. Now (a) the channel is a socketpair the supervisor hands its server: the server has
# no NOTIFY_SOCKET, /proc/net/unix names nothing of ours, uid 1000's datagram with a
# descriptor to the old name is refused (ECONNREFUSED); a hog over L is killed on time; a
# crashed server is still restarted and takes the mount over. (b) The daemon never waits for
# a manager that stops reading: a manager (NOTIFY_SOCKET, as systemd's) that read until
# READY=1 and then let its queue fill; the daemon's STATUS (every 5 s) and WATCHDOG=1 (every
# 200 ms) find it full for 6 s; a hog over L is killed on time, the shadow answers.
# Figures: each kill's lateness, the takeover time.
# timeout: 150
. /oomd/lib.sh
L=$((32 * MiB))
managed() { # NAME: a cgroup with L and T = 600 ms; prints its real path
	_c=$(mkcg "$1")
	setknob "/shadow${_c#$CGROOT}" memory.max "$L"
	setknob "/shadow${_c#$CGROOT}" memory.oom_delay_millisecs 600
	echo "$_c"
}
# (a) --supervise: nothing to reach
start_daemon /shadow --supervise
wait_for 10000 grep -q 'serving ' /tmp/oomdelayfs.log || fail "the server did not serve"
sp=$(server_pid) || fail "no server under the supervisor"
tr '\0' '\n' <"/proc/$sp/environ" | grep -q '^NOTIFY_SOCKET=' &&
	fail "the server has a NOTIFY_SOCKET: $(tr '\0' '\n' <"/proc/$sp/environ" | grep NOTIFY)"
grep -q "@oomdelayfs" /proc/net/unix && fail "an abstract socket of ours: $(grep @oomdelayfs /proc/net/unix)"
r=$(odt asuser 1000 1000 notifyx send "@oomdelayfs-supervisor/$DAEMON_PID")
[ "$r" = ECONNREFUSED ] || fail "uid 1000's datagram to the supervisor's old name: '$r'"
a=$(managed a)
ka=$(killed_on_time "$a" "/shadow${a#$CGROOT}")
n0=$(takeovers)
t0=$(now_ms)
kill -KILL "$sp"
wait_for 15000 _took_over "$n0" || fail "no takeover after the server's crash: $(tail -n 5 /tmp/oomdelayfs.log)"
tt=$(($(now_ms) - t0))
[ "$(cat "/shadow${a#$CGROOT}/memory.max")" = "$L" ] || fail "the shadow after the restart: $(cat "/shadow${a#$CGROOT}/memory.max" 2>&1)"
stop_daemon
[ "$DAEMON_STOP" = term ] || fail "the supervisor did not stop on SIGTERM ($DAEMON_STOP)"
# (b) a manager that stops reading
rm -f /tmp/sink.ready
notifyx sink @odt-stuck-manager /tmp/sink.ready >/tmp/sink.out 2>&1 &
SINK=$!
usleep 200000
export NOTIFY_SOCKET=@odt-stuck-manager WATCHDOG_USEC=400000
start_daemon /shadow
unset NOTIFY_SOCKET WATCHDOG_USEC
wait_for 10000 test -s /tmp/sink.ready || fail "the manager never saw READY=1: $(cat /tmp/sink.out)"
grep -q 'watchdog: WATCHDOG=1 every 200 ms' /tmp/oomdelayfs.log || fail "the daemon does not feed the watchdog"
odt sleep 6000 # a STATUS (5 s) and 30 WATCHDOG=1 into the full queue
b=$(managed b)
kb=$(killed_on_time "$b" "/shadow${b#$CGROOT}")
alive "$SINK" || fail "the manager died: $(cat /tmp/sink.out)"
stop_daemon
[ "$DAEMON_STOP" = term ] || fail "the daemon did not stop on SIGTERM with its manager's queue full ($DAEMON_STOP)"
kill "$SINK"
pass "supervised: no name to reach (uid 1000: ECONNREFUSED), kill +$ka ms, crash taken over in $tt ms;" \
	"manager's queue full ($(cat /tmp/sink.ready)): kill +$kb ms, stop by SIGTERM"
