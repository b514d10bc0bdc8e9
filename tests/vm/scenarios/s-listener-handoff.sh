# s-listener-handoff (issue 10, deliverable 1): what uid 1000 does to an eventfd after
# registering it changes nothing for anyone else. One caller registers and then closes both
# its eventfd and its control descriptor (our reference keeps the eventfd alive); another
# registers and hands its eventfd on (fork, the registering parent exits at once). At the
# cgroup's OOM onset (T = 600 ms, L = 32 MiB) the kill comes on time, the process the eventfd
# was handed to hears the onset, and the same uid can still register afterwards.
# Figures: the kill's lateness, the handed-on listener's signal after the onset.
# timeout: 120
. /oomd/lib.sh
start_daemon /shadow
L=$((32 * MiB))
cg=$(mkcg ho); s=/shadow${cg#$CGROOT}
setknob "$s" memory.max "$L"
setknob "$s" memory.oom_delay_millisecs 600
rm -f /tmp/c.ready /tmp/h.ready
odt asuser 1000 1000 evhostile closed "$s" --ready /tmp/c.ready >/tmp/c.out 2>&1 &
CPID=$!
wait_for 5000 test -e /tmp/c.ready || fail "the closing listener did not register: $(cat /tmp/c.out)"
odt asuser 1000 1000 v1listener "$s" --fork --count 1 --timeout 60000 --ready /tmp/h.ready >/tmp/h.out 2>&1
[ $? = 0 ] || fail "the handing-on listener's parent failed: $(cat /tmp/h.out)"
wait_for 5000 test -e /tmp/h.ready || fail "the handing-on listener did not register: $(cat /tmp/h.out)"
child=$(sed -n 's/^forked .* child=\([0-9]*\).*/\1/p' /tmp/h.out)
[ -n "$child" ] || fail "no child reported: $(cat /tmp/h.out)"
kl=$(killed_on_time "$cg" "$s")
wait_for 5000 grep -q '^signal 1 ' /tmp/h.out || fail "the process the eventfd was handed to heard nothing: $(cat /tmp/h.out)"
tsig=$(awk '/^signal 1 /{print $3}' /tmp/h.out)
dl=$(deadline_ns "$cg") # from the daemon's log line of the hold (its state is gone with it)
onset=$((dl / 1000000 - 600))
kill "$CPID"
wait "$CPID" 2>/dev/null
# the legitimate action after it: the same uid registers
odt asuser 1000 1000 v1listener "$s" --count 1 --timeout 100 >/tmp/n.out 2>&1
grep -q '^registered .*listeners=1' /tmp/n.out || fail "uid 1000 cannot register again: $(cat /tmp/n.out)"
alive "$DAEMON_PID" || fail "the daemon died"
stop_daemon
pass "kill +$kl ms after the deadline with a closed and a handed-on eventfd registered;" \
	"the process it was handed to heard the onset $(awk -v s="$tsig" -v o="$onset" 'BEGIN{printf "%.0f", s - o}') ms after it"
