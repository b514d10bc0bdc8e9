# f-fd-restart (issue 20, deliverables 2 and 3): descriptors opened through the shadow tree
# before a restart of the server work after it, never ESTALE. One process (progs/fdkeep.c)
# opens, in a memory cgroup of a --supervise --watchdog-sec 3 daemon: memory.current and
# memory.stat (real files passed through), memory.max (virtualised), memory.oom_control
# (synthetic), memory.oom_delay_millisecs and memory.low for writing (synthetic, real), and the
# cgroup's directory; a thread of it blocks in poll(POLLPRI) on another memory.oom_control.
# The server is then ended three ways, each followed by a round of read, pread, write (read
# back), poll, readdir and openat relative to the directory on every descriptor: SIGKILL (a
# crash), SIGSTOP (the supervisor's watchdog kills it), SIGUSR2 to the supervisor (the upgrade
# path). Last, the poll() waiter, asleep since before the first restart, must wake at the next
# change of its file: a hog over L starts a hold. Every descriptor then closes without error.
# The same three restarts and rounds then run on the v1 layout (--layout v1: every file is the
# daemon's own; memory.usage_in_bytes, memory.stat, memory.limit_in_bytes, memory.oom_control,
# memory.oom_delay_millisecs, memory.soft_limit_in_bytes written, the directory).
# Figures: the gap of each restart, when the waiter woke after the onset.
# timeout: 240
. /oomd/lib.sh
command -v fdkeep >/dev/null || skip "tests/vm/progs/fdkeep is not built"
# rounds OUT WHAT: fdkeep (writing OUT) did round 0; each restart kind, then a round on
# every descriptor, which must be ok. Sets GAPS.
rounds() {
	wait_for 10000 test -e /tmp/fk/ready.0 || fail "$2: fdkeep did not start: $(cat "$1")"
	grep -q '^round 0 ok' "$1" || fail "$2, before any restart: $(cat "$1")"
	_r=1
	GAPS=""
	for _k in kill watchdog upgrade; do
		_g=$(restart_server "$_k")
		touch "/tmp/fk/go.$_r"
		wait_for 30000 test -e "/tmp/fk/ready.$_r" || fail "$2: round $_r (after the $_k) did not finish: $(cat "$1")"
		grep -q "^round $_r ok" "$1" || fail "$2, after the $_k: $(grep "^round $_r" "$1")"
		GAPS="$GAPS $_k ${_g} ms,"
		_r=$((_r + 1))
	done
}
start_daemon /shadow --supervise --watchdog-sec 3
L=$((32 * MiB))
cg=$(mkcg fd); s=/shadow${cg#$CGROOT}
setknob "$s" memory.max "$L"
setknob "$s" memory.oom_delay_millisecs 400
mkdir -p /tmp/fk
rm -f /tmp/fk/*
fdkeep "$s" /tmp/fk 3 >/tmp/fk.out 2>&1 &
FK=$!
rounds /tmp/fk.out v2
gaps=$GAPS
grep -q '^pollpri' /tmp/fk.out && fail "the poll() waiter returned without a change: $(grep '^pollpri' /tmp/fk.out)"
woke=$(grep -c 'woke [0-9]* poll() waiters' /tmp/oomdelayfs.log)
t0=$(now_ms)
start_hog "$cg" 256
wait_for 15000 grep -q '^pollpri' /tmp/fk.out || fail "the poll() waiter, blocked since before the restarts, did not wake at the OOM onset ($(hold_state "$cg" "$s"))"
line=$(grep '^pollpri' /tmp/fk.out)
tw=$(echo "$line" | awk -v t="$t0" '{ printf "%d", $2 - t }')
case "$line" in *revents=0x2*|*revents=0xa*|*revents=0x3*|*revents=0xb*) ;; *) fail "the waiter's poll(): $line" ;; esac
wait_for 10000 dead "$HOG_PID" || fail "the hog outlived its hold"
touch /tmp/fk/go.4
wait_for 10000 grep -q '^close' /tmp/fk.out || fail "fdkeep did not close: $(cat /tmp/fk.out)"
grep -q '^close ok' /tmp/fk.out || fail "closing the descriptors: $(cat /tmp/fk.out)"
wait "$FK"
stop_daemon
[ "$DAEMON_STOP" = term ] || fail "the supervisor did not stop on SIGTERM ($DAEMON_STOP)"
# the v1 layout
start_daemon /shadow --supervise --watchdog-sec 3 --layout v1
cg1=$(mkcg fd1); s1=/shadow${cg1#$CGROOT}
setknob "$s1" memory.limit_in_bytes "$L"
rm -f /tmp/fk/*
FDKEEP_V1=1 fdkeep "$s1" /tmp/fk 3 >/tmp/fk1.out 2>&1 &
FK=$!
rounds /tmp/fk1.out v1
gaps1=$GAPS
touch /tmp/fk/go.4
wait_for 10000 grep -q '^close' /tmp/fk1.out || fail "v1: fdkeep did not close: $(cat /tmp/fk1.out)"
grep -q '^close ok' /tmp/fk1.out || fail "v1: closing the descriptors: $(cat /tmp/fk1.out)"
kill "$FK" 2>/dev/null # its poll() waiter saw no change
stop_daemon
pass "read, pread, write, poll, readdir, openat on 8 descriptors opened before: ok after each restart (${gaps% ,} to the takeover);" \
	"the poll() waiter asleep across all three woke ${tw} ms after the hog started (revents $(echo "$line" | sed 's/.*revents=\([^ ]*\).*/\1/')); takeovers that woke waiters: $woke; all closed;" \
	"v1 layout: the same after each restart (${gaps1% ,})"
