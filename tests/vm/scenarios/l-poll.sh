# l-poll (issue 4, deliverable 2, rule 11): poll() through the shadow mount.
#  - the shadow memory.oom_control reports POLLPRI when its content changes (under_oom 0->1 at
#    the onset of a hold) and is quiet before;
#  - a passed-through memory.events reports POLLPRI like the real file (high 0->1, same event);
#  - a passed-through cgroup.events reports POLLPRI (populated 0->1).
# Each waiter (odt waitev --mode poll) re-reads the file after every wake-up and stops at the
# first change of its key; its wake time is compared with the real file's waiter.
# Figures: wake-up times relative to the poll wake on the real memory.events.
# timeout: 90
. /oomd/lib.sh
start_daemon /shadow
L=$((32 * MiB))
cg=$(mkcg p); s=/shadow${cg#$CGROOT}
setknob "$s" memory.max "$L"
setknob "$s" memory.oom_delay_millisecs 3000
# cgroup.events through the shadow mount
tc0=$(odt now)
odt waitev "$s/cgroup.events" populated --mode poll --timeout 20000 >/tmp/lp.ce 2>&1 &
CE=$!
usleep 300000
tce=$(odt now)
sh -c "echo \$\$ >$cg/cgroup.procs; exec sleep 1" &
SP=$!
wait "$CE" || fail "poll on the shadow cgroup.events did not wake on populated 0->1: $(cat /tmp/lp.ce)"
wait "$SP"
cel=$(awk '{print $2}' /tmp/lp.ce)
wait_for 3000 unpopulated "$cg" || fail "sleep did not leave $cg"
# the three waiters of the hold, each started 300 ms apart; t* taken just before each start
t1=$(odt now)
odt waitev "$cg/memory.events" high --mode poll --timeout 60000 >/tmp/lp.real 2>&1 &
P1=$!
usleep 300000
t2=$(odt now)
odt waitev "$s/memory.events" high --mode poll --timeout 60000 >/tmp/lp.shev 2>&1 &
P2=$!
usleep 300000
t3=$(odt now)
odt waitev "$s/memory.oom_control" under_oom --mode poll --timeout 60000 >/tmp/lp.ctl 2>&1 &
P3=$!
usleep 300000
e0=$(odt now); e1=$(odt now)
kill -0 "$P3" 2>/dev/null || fail "poll on the shadow memory.oom_control returned before any change: $(cat /tmp/lp.ctl)"
k0=$(evkey "$cg" oom_kill)
start_hog "$cg" 48 --exit
wait "$P1" || fail "real memory.events: $(cat /tmp/lp.real)"
wait "$P2" || fail "poll on the shadow memory.events did not report the change: $(cat /tmp/lp.shev)"
wait "$P3" || fail "poll on the shadow memory.oom_control did not report under_oom 0->1: $(cat /tmp/lp.ctl)"
echo "real: $(cat /tmp/lp.real); shadow memory.events: $(cat /tmp/lp.shev); shadow oom_control: $(cat /tmp/lp.ctl)"
[ "$(awk '{print $1}' /tmp/lp.ctl)" = 1 ] || fail "shadow memory.oom_control: under_oom changed to $(cat /tmp/lp.ctl), not 1"
setknob "$s" memory.max $((96 * MiB))
wait "$HOG_PID"; rc=$?
[ "$rc" = 0 ] || fail "hog exited $rc"
[ "$(evkey "$cg" oom_kill)" = "$k0" ] || fail "oom_kill moved"
rel=$(awk -v t1="$t1" -v t2="$t2" -v t3="$t3" -v a="$(awk '{print $2}' /tmp/lp.real)" \
	-v b="$(awk '{print $2}' /tmp/lp.shev)" -v c="$(awk '{print $2}' /tmp/lp.ctl)" 'BEGIN{
	r = t1 + a; printf "shadow memory.events POLLPRI %+.1f ms, shadow memory.oom_control POLLPRI (under_oom 0->1) %+.1f ms after the real memory.events poll wake", t2 + b - r, t3 + c - r }')
stop_daemon
pass "$rel (+-$(awk -v x="$e0" -v y="$e1" 'BEGIN{printf "%.0f", y - x}') ms, the cost of starting a program);" \
	"shadow cgroup.events: poll woke on populated 0->1 $(awk -v a="$tc0" -v c="$cel" -v m="$tce" 'BEGIN{printf "%.1f", a + c - m}') ms after the move started"
