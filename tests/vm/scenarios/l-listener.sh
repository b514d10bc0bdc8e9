# l-listener (issue 4, rules 2, 5, 11): the article's use case end to end. A cgroup-v1 style
# listener (v1listener: eventfd + cgroup.event_control on the shadow memory.oom_control) waits
# on a cgroup with memory.oom_delay_millisecs = 5000; a hog passes L; the listener's eventfd
# fires at the onset, it raises memory.max through the shadow mount, the hog finishes, nothing
# is killed (the real oom_kill counter is unchanged).
# Figures: eventfd wake after the kernel's own memory.events notification (inotify and poll
# on the real file, same VM), raise time, and the kernel's own notification latency
# (odt evlat high: charge over memory.high -> inotify/poll wake).
# timeout: 120
. /oomd/lib.sh
start_daemon /shadow
L=$((32 * MiB))
cg=$(mkcg l); s=/shadow${cg#$CGROOT}
setknob "$s" memory.max "$L"
setknob "$s" memory.oom_delay_millisecs 5000
[ -w "$s/cgroup.event_control" ] || fail "no writable cgroup.event_control in the shadow cgroup"
rm -f /tmp/l.ready
v1listener "$s" --raise $((96 * MiB)) --count 1 --timeout 60000 --ready /tmp/l.ready >/tmp/l.out 2>&1 &
LPID=$!
wait_for 5000 test -e /tmp/l.ready || fail "listener did not register: $(cat /tmp/l.out)"
# the kernel's own notification of the same event, on the real memory.events
# (odt waitev prints the time from its own start: ta is taken just before it is forked, and
# the cost of starting a program (tb - ta of two odt runs) bounds the error)
odt waitev "$cg/memory.events" max --mode poll --timeout 60000 >/tmp/l.kmax 2>&1 &
usleep 200000
ta=$(odt now)
odt waitev "$cg/memory.events" high --mode inotify --timeout 60000 >/tmp/l.ki 2>&1 &
usleep 300000
ta2=$(odt now)
odt waitev "$cg/memory.events" high --mode poll --timeout 60000 >/tmp/l.kp 2>&1 &
usleep 300000
e0=$(odt now); e1=$(odt now)
k0=$(evkey "$cg" oom_kill)
start_hog "$cg" 48 --exit
wait_for 60000 dead "$LPID" || fail "no eventfd signal within 60 s: $(cat /tmp/l.out)"
wait "$LPID"; lrc=$?
cat /tmp/l.out
[ "$lrc" = 0 ] || fail "listener exited $lrc: $(cat /tmp/l.out)"
grep -q '^signal 1 ' /tmp/l.out || fail "no signal line: $(cat /tmp/l.out)"
grep -q '^signal 1 .*under_oom 1' /tmp/l.out || fail "under_oom was not 1 when the signal arrived: $(grep ^signal /tmp/l.out)"
grep -q '^raised ' /tmp/l.out || fail "listener could not raise memory.max: $(cat /tmp/l.out)"
wait "$HOG_PID"; rc=$?
[ "$rc" = 0 ] || fail "hog exited $rc, not 0 (killed?)"
k1=$(evkey "$cg" oom_kill)
[ "$k1" = "$k0" ] || fail "real oom_kill moved $k0 -> $k1"
[ "$(cat "$s/memory.max")" = $((96 * MiB)) ] || fail "shadow memory.max $(cat "$s/memory.max") after the raise"
wait_for 3000 sh -c "! grep -q '^under_oom 1' $s/memory.oom_control" || fail "under_oom still 1 after the raise"
tsig=$(awk '/^signal 1 /{print $3}' /tmp/l.out)
traise=$(awk '/^raised /{print $4}' /tmp/l.out | sed 's/took=//')
wait_for 2000 test -s /tmp/l.ki
ki=$(awk '{print $2}' /tmp/l.ki); kp=$(awk '{print $2}' /tmp/l.kp)
[ -n "$ki" ] || fail "the kernel's memory.events high never changed: $(cat /tmp/l.ki)"
# absolute wake times of the kernel watchers: started between ta and tb
lat=$(awk -v s="$tsig" -v a="$ta" -v a2="$ta2" -v e="$(awk -v x="$e0" -v y="$e1" 'BEGIN{print y - x}')" -v i="$ki" -v p="$kp" 'BEGIN{
	printf "eventfd wake %.1f ms after the kernel'"'"'s own inotify wake on the real memory.events (high 0->1), %.1f ms after its poll wake (at most; minus up to %.1f ms, the cost of starting a program)", s - (a + i), s - (a2 + p), e }')
kmax=$(awk '{print $1}' /tmp/l.kmax 2>/dev/null)
cg2=$(mkcg kn)
kl=$(odt evlat "$cg2" high --mb 16 --timeout 10000 2>&1) || kl="evlat failed: $kl"
stop_daemon
pass "$lat; raise took $traise ms; hog finished 48 MiB, oom_kill $k0->$k1; real max events during the test: ${kmax:-0};" \
	"kernel's own notification latency (odt evlat): $kl"
