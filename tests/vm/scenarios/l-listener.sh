# l-listener (issue 4, rules 2, 5, 11): the article's use case end to end. A cgroup-v1 style
# listener (v1listener: eventfd + cgroup.event_control on the shadow memory.oom_control) waits
# on a cgroup with memory.oom_delay_millisecs = 5000; a hog passes L; the listener's eventfd
# fires at the onset, it raises memory.max through the shadow mount, the hog finishes, nothing
# is killed (the real oom_kill counter is unchanged).
# Figures: eventfd wake after the kernel's own memory.events notification of the same onset
# (poll on the real file, in the listener's process), raise time, and the kernel's own
# notification latency (odt evlat high: charge over memory.high -> inotify/poll wake).
# timeout: 120
. /oomd/lib.sh
start_daemon /shadow
L=$((32 * MiB))
cg=$(mkcg l); s=/shadow${cg#$CGROOT}
setknob "$s" memory.max "$L"
setknob "$s" memory.oom_delay_millisecs 5000
[ -w "$s/cgroup.event_control" ] || fail "no writable cgroup.event_control in the shadow cgroup"
rm -f /tmp/l.ready
# --compare: in the same process, threads blocked in poll(POLLPRI) on the real memory.events
# (the kernel's own notification of the onset) and on the shadow memory.oom_control
v1listener "$s" --raise $((96 * MiB)) --timeout 60000 --ready /tmp/l.ready \
	--compare "$cg/memory.events" --compare "$s/memory.oom_control" >/tmp/l.out 2>&1 &
LPID=$!
wait_for 5000 test -e /tmp/l.ready || fail "listener did not register: $(cat /tmp/l.out)"
k0=$(evkey "$cg" oom_kill)
start_hog "$cg" 48 --exit
wait_for 60000 grep -q '^raise' /tmp/l.out || fail "no eventfd signal within 60 s: $(cat /tmp/l.out)"
grep -q '^signal 1 ' /tmp/l.out || fail "no signal line: $(cat /tmp/l.out)"
grep -q '^signal 1 .*under_oom 1' /tmp/l.out || fail "under_oom was not 1 when the signal arrived: $(grep ^signal /tmp/l.out)"
grep -q '^raised ' /tmp/l.out || fail "listener could not raise memory.max: $(cat /tmp/l.out)"
wait "$HOG_PID"; rc=$?
usleep 500000
kill "$LPID"; wait "$LPID" 2>/dev/null
cat /tmp/l.out
[ "$(grep -c '^signal' /tmp/l.out)" = 1 ] || fail "not exactly one eventfd signal for one onset: $(cat /tmp/l.out)"
[ "$rc" = 0 ] || fail "hog exited $rc, not 0 (killed?)"
k1=$(evkey "$cg" oom_kill)
[ "$k1" = "$k0" ] || fail "real oom_kill moved $k0 -> $k1"
[ "$(cat "$s/memory.max")" = $((96 * MiB)) ] || fail "shadow memory.max $(cat "$s/memory.max") after the raise"
wait_for 3000 sh -c "! grep -q '^under_oom 1' $s/memory.oom_control" || fail "under_oom still 1 after the raise"
tsig=$(awk '/^signal 1 /{print $3}' /tmp/l.out)
traise=$(awk '/^raised /{print $4}' /tmp/l.out | sed 's/took=//')
# the first change of the real memory.events (high 0->1: usage passed L = the real memory.high)
tk=$(awk -v f="$cg/memory.events" '$1 == "pollpri" && $3 == f {print $2; exit}' /tmp/l.out)
tc=$(awk -v f="$s/memory.oom_control" '$1 == "pollpri" && $3 == f && /under_oom 1/ {print $2; exit}' /tmp/l.out)
[ -n "$tk" ] || fail "no POLLPRI on the real memory.events: $(cat /tmp/l.out)"
lat=$(awk -v s="$tsig" -v k="$tk" -v c="$tc" 'BEGIN{
	printf "eventfd wake %.1f ms after the kernel'"'"'s POLLPRI on the real memory.events (same process)", s - k
	if (c != "") printf ", shadow memory.oom_control POLLPRI (under_oom 1) %+.1f ms from it", c - k }')
cg2=$(mkcg kn)
kl=$(odt evlat "$cg2" high --mb 16 --timeout 10000 2>&1) || kl="evlat failed: $kl"
stop_daemon
pass "$lat; raise took $traise ms; hog finished 48 MiB, oom_kill $k0->$k1; " \
	"kernel's own notification latency (odt evlat): $kl"
