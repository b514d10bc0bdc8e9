# l-poll (issue 4, deliverable 2, rule 11): poll() through the shadow mount.
#  - the shadow memory.oom_control reports POLLPRI when its content changes (under_oom 0->1 at
#    the onset of a hold) and is quiet before;
#  - a passed-through memory.events reports POLLPRI like the real file (high 0->1, same event);
#  - a passed-through cgroup.events reports POLLPRI (populated 0->1).
# Poll waiters re-read the file after every wake-up (that re-arms kernfs poll) and record each
# change; the hold's waiters run as threads of one process, so their times compare directly.
# Figures: wake-up times relative to the POLLPRI on the real memory.events.
# timeout: 90
. /oomd/lib.sh
start_daemon /shadow
L=$((32 * MiB))
cg=$(mkcg p); s=/shadow${cg#$CGROOT}
setknob "$s" memory.max "$L"
setknob "$s" memory.oom_delay_millisecs 30000 # the raise below ends the hold
# cgroup.events through the shadow mount, next to the real one (threads of one process)
rm -f /tmp/lc.r
v1listener "$s" --timeout 20000 --ready /tmp/lc.r --compare "$cg/cgroup.events" \
	--compare "$s/cgroup.events" >/tmp/lc.out 2>&1 &
LC=$!
wait_for 5000 test -e /tmp/lc.r || fail "listener: $(cat /tmp/lc.out)"
usleep 300000
sh -c "echo \$\$ >$cg/cgroup.procs; exec sleep 1" &
SP=$!
wait "$SP"
# populated 1->0 travels kernel -> daemon -> poll thread: wait for it rather than guess how long
wait_for 5000 grep -q "^pollpri [0-9.]* $s/cgroup.events .*populated 0" /tmp/lc.out
kill "$LC"; wait "$LC" 2>/dev/null
cat /tmp/lc.out
cr=$(awk -v f="$cg/cgroup.events" '$1 == "pollpri" && $3 == f && /populated 1/ {print $2; exit}' /tmp/lc.out)
cs=$(awk -v f="$s/cgroup.events" '$1 == "pollpri" && $3 == f && /populated 1/ {print $2; exit}' /tmp/lc.out)
[ -n "$cs" ] || fail "poll on the shadow cgroup.events did not report populated 0->1: $(cat /tmp/lc.out)"
[ -n "$cr" ] || fail "poll on the real cgroup.events did not report populated 0->1: $(cat /tmp/lc.out)"
grep -q "^pollpri [0-9.]* $s/cgroup.events .*populated 0" /tmp/lc.out || fail "the shadow cgroup.events did not report populated 1->0"
cel=$(awk -v a="$cr" -v b="$cs" 'BEGIN{printf "%+.1f", b - a}')
wait_for 3000 unpopulated "$cg" || fail "sleep did not leave $cg"
# the hold, watched in one process: poll(POLLPRI) on the real memory.events, the shadow
# memory.events and the shadow memory.oom_control (v1listener --compare threads; its own
# registration on the cgroup is the reference eventfd)
rm -f /tmp/lp.r
v1listener "$s" --timeout 60000 --ready /tmp/lp.r --compare "$cg/memory.events" \
	--compare "$s/memory.events" --compare "$s/memory.oom_control" >/tmp/lp.out 2>&1 &
LP=$!
wait_for 5000 test -e /tmp/lp.r || fail "listener: $(cat /tmp/lp.out)"
usleep 500000
grep -q "^pollpri" /tmp/lp.out && fail "POLLPRI before any change: $(cat /tmp/lp.out)"
k0=$(evkey "$cg" oom_kill)
start_hog "$cg" 48 --exit
uoom() { grep -q '^under_oom 1' "$s/memory.oom_control"; }
wait_for 30000 uoom || fail "no hold"
usleep 500000
setknob "$s" memory.max $((96 * MiB))
wait "$HOG_PID"; rc=$?
[ "$rc" = 0 ] || fail "hog exited $rc"
usleep 500000
kill "$LP"; wait "$LP" 2>/dev/null
cat /tmp/lp.out
[ "$(evkey "$cg" oom_kill)" = "$k0" ] || fail "oom_kill moved"
first() { awk -v f="$1" -v p="$2" '$1 == "pollpri" && $3 == f && index($0, p) {print $2; exit}' /tmp/lp.out; }
# the first change of each (the counter may have moved more than once before the re-read)
tr_=$(first "$cg/memory.events" "high ")
ts_=$(first "$s/memory.events" "high ")
tu1=$(first "$s/memory.oom_control" "under_oom 1")
tu0=$(first "$s/memory.oom_control" "under_oom 0")
nr=$(grep -c "^pollpri [0-9.]* $cg/memory.events" /tmp/lp.out)
ns=$(grep -c "^pollpri [0-9.]* $s/memory.events" /tmp/lp.out)
[ -n "$tr_" ] || fail "the real memory.events never reported high 1 through POLLPRI"
[ -n "$ts_" ] || fail "poll on the shadow memory.events did not report the change of high"
[ -n "$tu1" ] || fail "poll on the shadow memory.oom_control did not report under_oom 0->1"
[ -n "$tu0" ] || fail "poll on the shadow memory.oom_control did not report under_oom 1->0 after the raise"
sp=$(grep '^pollpri-spurious' /tmp/lp.out | awk '{print $3 ":" $4}' | tr '\n' ' ')
grep -q "^pollpri-spurious [0-9.]* $s/memory.oom_control" /tmp/lp.out && fail "POLLPRI on the shadow memory.oom_control without a change (not re-armed by the read?): $sp"
ns_min=$((nr / 4 + 1))
[ "$ns" -ge "$ns_min" ] || fail "shadow memory.events reported $ns changes, the real one $nr"
rel=$(awk -v r="$tr_" -v s="$ts_" -v u="$tu1" 'BEGIN{
	printf "from the real memory.events POLLPRI (high moved): shadow memory.events POLLPRI %+.1f ms, shadow memory.oom_control POLLPRI (under_oom 0->1) %+.1f ms", s - r, u - r }')
stop_daemon
pass "$rel (one process); changes seen through POLLPRI: real memory.events $nr, shadow $ns; under_oom 1->0 seen too; wake-ups without a change: ${sp:-none};" \
	"shadow cgroup.events POLLPRI (populated 0->1) $cel ms from the real one's, 1->0 seen too"
