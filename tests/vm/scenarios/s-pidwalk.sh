# s-pidwalk (issue 21, deliverable 3): a cgroup.procs write from another pid namespace
# makes the daemon walk /proc to translate the pid (fs/pids.c): a container can keep FUSE
# workers busy with a loop of such writes (3.2 s a walk under TCG with 1,078 tasks, and
# root's own move through the shadow took 2.7 s meanwhile). The walk now rules out the tasks
# of the daemon's own pid namespace by a stat of their ns/pid, reading the status only of
# tasks in other namespaces. And the kill path does not wait for the walks: its
# threads run at the daemon's niceness (od_harden: -20 by default), the FUSE workers at the
# one it was started with, and no lock of the kill path is held during the walk. 1,000
# extra processes make /proc long; 4 writers, each in a pid namespace of its own, write a
# pid that does not exist there (the worst case: the whole walk, then ESRCH) in loops; a
# hog over L (T = 600 ms) is killed on time meanwhile, and root's own move of a process
# through the shadow answers.
# Figures: walks per second while the hog was held, one walk's time, the kill's lateness.
# timeout: 200
. /oomd/lib.sh
start_daemon /shadow
i=0
while [ $i -lt 1000 ]; do sleep 600 & i=$((i + 1)); done
w=$(mkcg w); sw=/shadow${w#$CGROOT}
t0=$(now_ms)
r=$(unshare -p -f sh -c "echo 4242 >$sw/cgroup.procs" 2>&1) && fail "pid 4242 of a new namespace moved: $r"
t1=$(now_ms)
case $r in *"No such process"*) ;; *) fail "pid 4242 of a new namespace: '$r', not ESRCH" ;; esac
for k in 1 2 3 4; do
	unshare -p -f sh -c "n=0; while :; do echo 4242 2>/dev/null >$sw/cgroup.procs; n=\$((n + 1)); echo \$n >/tmp/walk.$k; done" 2>/dev/null &
done
odt sleep 2000
n0=$(cat /tmp/walk.1 /tmp/walk.2 /tmp/walk.3 /tmp/walk.4 | awk '{ s += $1 } END { print s + 0 }')
ta=$(now_ms)
x=$(mkcg x); sx=/shadow${x#$CGROOT}
setknob "$sx" memory.max $((32 * MiB))
setknob "$sx" memory.oom_delay_millisecs 600
# killed_on_time, but the hog competes for the CPU with the walkers' loops: the deadline is
# looked for once it is over L, not 3 s after it starts (6.1 under TCG: it was not there yet)
k0=$(evkey "$x" oom_kill)
kill_watch "$x"
start_hog "$x" 256
onset() { above "$x" $((32 * MiB)) || _has_deadline "$x" || dead "$HOG_PID"; }
wait_for 60000 onset || fail "the hog did not pass L within 60 s ($(hog_kb) KiB)"
dl=$(deadline_ns "$x")
wait_for 10000 dead "$HOG_PID" || fail "hog alive 10 s after the onset ($(hold_state "$x" "$sx"))"
kl=$(kill_late "$x" "$dl")
awk -v l="$kl" 'BEGIN { exit !(l < 2000) }' || fail "the kill came $kl ms after the deadline"
[ "$(evkey "$x" oom_kill)" -gt "$k0" ] || fail "the kernel's oom_kill did not move"
sleep 600 &
sp=$!
tm0=$(now_ms)
echo "$sp" >"$sw/cgroup.procs" || fail "root's move of pid $sp through the shadow failed"
tm=$(($(now_ms) - tm0))
grep -q "${w#$CGROOT}\$" "/proc/$sp/cgroup" || fail "pid $sp is in $(cat "/proc/$sp/cgroup"), not $w"
n1=$(cat /tmp/walk.1 /tmp/walk.2 /tmp/walk.3 /tmp/walk.4 | awk '{ s += $1 } END { print s + 0 }')
tb=$(now_ms)
rate=$(awk -v n=$((n1 - n0)) -v t=$((tb - ta)) 'BEGIN { printf "%.0f", n * 1000 / t }')
alive "$DAEMON_PID" || fail "the daemon died"
stop_daemon
pass "$(ls -d /proc/[0-9]* | wc -l) tasks; one walk $((t1 - t0)) ms (with the fork); $rate walks/s by 4 writers;" \
	"kill +$kl ms; root's move through the shadow in $tm ms during the walks"
