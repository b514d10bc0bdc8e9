# f-pressure (issue 5, deliverable 1): the daemon runs with --protect 64M (its own cgroup
# oomdelayfs.daemon, memory.min = 64 MiB) and the whole VM is in global memory pressure when a
# held cgroup's deadline comes. Order matters: two managed cgroups (L = 32 MiB) are held first
# (long delay) until their hogs are frozen at L + the freeze margin, so that their memory stops
# moving; then `pressure fill` outside every managed cgroup takes anonymous memory until
# MemAvailable is about 48 MiB and keeps mapping and unmapping 16 MiB so that allocations go
# through direct reclaim (no swap; 32 MiB left too little: CI on 6.12, 2026-12-06, the global
# OOM killer took the filler 1.3 s after the fill, while the probes below started, free
# memory under the min watermark); then both delays are re-armed (rule 6) to 5 s, so the
# deadlines fall while the pressure holds. Asserted: the filler is alive (the pressure was there)
# at the deadlines, nothing killed before them, the daemon's kill (its memory.max = L write)
# begins within 50 ms of each deadline, plus the worst wake-up lateness that a probe saw
# meanwhile: a pinned SCHED_FIFO 99 probe per vCPU (what the VM itself withheld: a TCG vCPU the
# host does not run) and an unpinned one at the daemon's own SCHED_FIFO 1 (what the VM's
# scheduler gave a bare thread placed as the daemon's deadline thread is: 6.1, 2026-12-06, it
# was up to 225 ms late in windows where the pinned probes were at most 27 ms late, and the
# daemon's deadline thread waited as long for a CPU; docs/DESIGN.md, "FIFO 1 in the VM").
# The 50 ms are then the daemon's own: its locks, allocations and hand-offs. Reported: that figure, when the kernel's OOM kill was
# seen (memory-locked inotify watcher), when the daemon's memory.max write returned (the
# kernel's kill done; from the daemon's log), MemAvailable and PSI at the deadline.
# OOMD_FP_MODE=group (f-pressure-group) runs the same with --kill-mode group: the kill is the
# cgroup.kill write, and the watcher waits for the cgroup to be empty.
# timeout: 300
. /oomd/lib.sh
command -v pressure >/dev/null || skip "tests/vm/progs/pressure is not built"
uoom() { grep -q '^under_oom 1' "$1/memory.oom_control"; }
avail() { awk '/^MemAvailable/ {print int($2 / 1024)}' /proc/meminfo; }
L=$((32 * MiB))
MODE=${OOMD_FP_MODE:-kernel}
start_daemon /shadow --protect 64M --kill-mode "$MODE"
grep -q 'oomdelayfs.daemon' "/proc/$DAEMON_PID/cgroup" || fail "--protect: the daemon is in $(cat "/proc/$DAEMON_PID/cgroup"), not oomdelayfs.daemon"
[ "$(cat $CGROOT/oomdelayfs.daemon/memory.min)" = $((64 * MiB)) ] || fail "--protect: memory.min is $(cat $CGROOT/oomdelayfs.daemon/memory.min)"
# Each thread's niceness, policy and real-time priority (stat fields 19, 41, 40): -20 for the
# main loop, the deadline thread and the actuators, the started-with 0 for the FUSE threads;
# --rt-priority's default 1 makes the deadline thread and the kill actuator SCHED_FIFO (policy 1)
# at priority 1, every other thread normal (policy 0)
nices=''
for t in /proc/$DAEMON_PID/task/*; do
	c=$(cat "$t/comm")
	set -- $(awk '{print $19, $41 "/" $40}' "$t/stat")
	n=$1 pol=$2
	nices="$nices $c:$n"
	case $c in
	oomdelayfs | oomd-actuator | oomd-killer | oomd-deadlines) [ "$n" = -20 ] || fail "thread $c of the daemon runs at niceness $n, not -20:$nices" ;;
	oomd-fuse) [ "$n" = 0 ] || fail "FUSE thread at niceness $n, not the started-with 0:$nices" ;;
	esac
	case $c in
	oomd-deadlines | oomd-killer) [ "$pol" = 1/1 ] || fail "thread $c: policy/rt_priority $pol, not SCHED_FIFO 1 (1/1)" ;;
	*) [ "${pol%/*}" = 0 ] || fail "thread $c: policy/rt_priority $pol, not SCHED_OTHER" ;;
	esac
done
case "$nices" in *' oomd-deadlines:'* ) ;; *) fail "no deadline thread (oomd-deadlines) in the daemon:$nices" ;; esac
log "daemon threads (comm:nice):$nices"
for n in p q; do
	cg=$(mkcg $n); s=/shadow${cg#$CGROOT}
	setknob "$s" memory.max "$L"
	setknob "$s" memory.oom_delay_millisecs 600000
done
P=$OOMD_CG/p Q=$OOMD_CG/q SP=/shadow${P#$CGROOT} SQ=/shadow${Q#$CGROOT}
a0=$(avail)
kp0=$(evkey "$P" oom_kill) kq0=$(evkey "$Q" oom_kill)
start_hog "$P" 200; HP=$HOG_PID
start_hog "$Q" 200; HQ=$HOG_PID
wait_for 60000 uoom "$SP" || fail "p: no hold within 60 s: $(hold_state "$P" "$SP")"
wait_for 60000 uoom "$SQ" || fail "q: no hold within 60 s: $(hold_state "$Q" "$SQ")"
wait_for 60000 frozen "$P" || fail "p: not frozen at L + the freeze margin within 60 s: $(hold_state "$P" "$SP")"
wait_for 60000 frozen "$Q" || fail "q: not frozen at L + the freeze margin within 60 s: $(hold_state "$Q" "$SQ")"
rm -f /tmp/fill.rep
rm -f /tmp/fill.log
pressure fill --leave 48 --churn-mb 16 --report /tmp/fill.rep --log /tmp/fill.log &
FP=$!
wait_for 120000 test -s /tmp/fill.rep || fail "the filler did not fill memory within 120 s"
alive "$FP" || fail "the filler died while filling (the global OOM killer?): no pressure to test under"
read -r fill_mb fill_avail </tmp/fill.rep
log "filler holds $fill_mb MiB; MemAvailable $a0 -> $fill_avail MiB"
usleep 500000 # let the churn start
# the watchers start before the re-arm, so that their starting point is the state before any
# kill however slow this shell is under the pressure
[ "$MODE" = group ] && kwopt=--emptied || kwopt=
# what the VM gives a real-time task meanwhile, on each vCPU (pressure rtprobe): a vCPU the
# host did not run delays the daemon's kill by as much, and no daemon can do better
probes=''
cpu=0
while [ "$cpu" -lt "$(nproc)" ]; do
	pressure rtprobe "$cpu" "/tmp/probe.$cpu" &
	probes="$probes $!"
	cpu=$((cpu + 1))
done
pressure rtprobe -1 /tmp/probe.fifo1 1 &
probes="$probes $!"
kill_watch "$P" $kwopt; KP=$KW_PID
kill_watch "$Q" $kwopt; KQ=$KW_PID
usleep 100000 # the watchers' first reading
[ "$(evkey "$P" oom_kill)$(evkey "$Q" oom_kill)" = "$kp0$kq0" ] || fail "oom_kill moved before the re-arm"
# 5 s: under this pressure the shell itself once needed 3.5 s from here to its first look
# at the held cgroups (with 3 s that run could not verify the pressure at the deadline)
setknob "$SP" memory.oom_delay_millisecs 5000
setknob "$SQ" memory.oom_delay_millisecs 5100
dlp=$(deadline_ns "$P") dlq=$(deadline_ns "$Q")
tn=$(pressure now | cut -d. -f1)
for d in "$dlp" "$dlq"; do
	[ $((d / 1000000 - tn)) -le 5200 ] || fail "the re-arm to 5 s did not reach the persisted deadline: $((d / 1000000 - tn)) ms ahead"
done
[ "$dlp" -lt "$dlq" ] && dl=$dlp || dl=$dlq
amin=$(avail)
checks=0
# both held until the first deadline, the filler alive (the pressure is there), and the lowest
# MemAvailable seen meanwhile (the clock is read after the checks, so a slow shell never
# blames the daemon)
while :; do
	a=$(avail); [ "$a" -lt "$amin" ] && amin=$a
	k=$(evkey "$P" oom_kill)$(evkey "$Q" oom_kill)
	alive "$HP" && alive "$HQ" && h=1 || h=0
	alive "$FP" && f=1 || f=0
	psi_dl=$(sed -n 's/^full avg10=\([0-9.]*\).*/\1/p' /proc/pressure/memory 2>/dev/null)
	t=$(pressure now | cut -d. -f1)
	[ "$t" -lt $((dl / 1000000)) ] || break
	[ "$h" = 1 ] || fail "a hog died $((dl / 1000000 - t)) ms before the deadline under pressure"
	[ "$k" = "$kp0$kq0" ] || fail "oom_kill moved $((dl / 1000000 - t)) ms before the deadline under pressure"
	[ "$f" = 1 ] || fail "the filler died $((dl / 1000000 - t)) ms before the deadline (the global OOM killer?): the deadline would not fall under pressure"
	checks=$((checks + 1))
	usleep 100000
done
# the pass says the deadlines fell under pressure: a look of this shell before them, or,
# when the shell itself was that slow under the pressure (CI, two VMs on two host cores: its
# first look 3.1-3.4 s after the deadline), the filler's own log: it samples MemAvailable
# after every churn pass, so a sample in the second before the deadline shows the pressure
# there (and kill_late >= 0 below shows no kill came before it)
if [ "$checks" -eq 0 ]; then
	near=$(awk -v d="$((dl / 1000000))" '$1 <= d && $1 >= d - 1000 { a = $2 } END { print a }' /tmp/fill.log)
	[ -n "$near" ] || fail "set-up too slow: this shell first looked $((t - dl / 1000000)) ms after the first deadline and the filler logged nothing in the second before it, so the pressure at it is unverified"
	[ "$near" -le $((fill_avail + 32)) ] || fail "no pressure at the first deadline: the filler's last sample before it shows MemAvailable $near MiB (filled to $fill_avail)"
	amin=$near
	log "this shell first looked $((t - dl / 1000000)) ms after the first deadline; the filler's sample before it: MemAvailable $near MiB"
fi
wait "$KP" || fail "p: no kill within 120 s of the re-arm: $(cat /tmp/kw.p)"
wait "$KQ" || fail "q: no kill within 120 s of the re-arm: $(cat /tmp/kw.q)"
latep=$(kill_late "$P" "$dlp") lateq=$(kill_late "$Q" "$dlq")
wait_for 10000 dead "$HP" || fail "p: hog alive 10 s after the kill"
wait_for 10000 dead "$HQ" || fail "q: hog alive 10 s after the kill"
alive "$FP" && fstate="alive after the kills (holding $fill_mb MiB)" || fstate="killed by the global OOM killer after the deadlines"
kill "$FP" 2>/dev/null; wait "$FP" 2>/dev/null
# the daemon's kill writes: when each began and returned (the kernel's kill done), ms after the deadline
kp=$(kill_times "$P" "$dlp") kq=$(kill_times "$Q" "$dlq")
issuep=${kp% *} donep=${kp#* } issueq=${kq% *} doneq=${kq#* }
alive "$DAEMON_PID" || fail "the daemon died under global pressure"
kill -TERM $probes
for pid in $probes; do wait "$pid" || fail "pressure rtprobe $pid failed"; done
# stall D ISSUE [FILES]: the worst lateness a probe saw (all of them, or FILES) in the
# windows that cover the deadline D (ns) to the kill's start ISSUE (ms after it)
stall() {
	_d=$1 _i=$2
	shift 2
	[ $# -gt 0 ] || set -- /tmp/probe.*
	cat "$@" | awk -v d="$((_d / 1000000))" -v i="$_i" \
		'$1 >= d && $1 <= d + i + 100 && $2 > m { m = $2 } END { printf "%.1f", m + 0 }'
}
stallp=$(stall "$dlp" "$issuep") stallq=$(stall "$dlq" "$issueq")
pinp=$(stall "$dlp" "$issuep" /tmp/probe.[0-9]) pinq=$(stall "$dlq" "$issueq" /tmp/probe.[0-9])
grep -E "delay over|late|protect|oomdelayfs.daemon" /tmp/oomdelayfs.log
stop_daemon
for v in "$issuep" "$issueq" "$latep" "$lateq"; do
	awk -v l="$v" 'BEGIN { exit !(l >= 0) }' || fail "a kill came $v ms relative to its deadline: BEFORE it (daemon p $issuep q $issueq, kernel p $latep q $lateq)"
done
# the daemon's own account of each kill, for a failure's message (CI shows only the FAIL line)
ticks=$(grep -F ": delay over" /tmp/oomdelayfs.log | tail -n 2 | sed -n 's|.*/\([pq]\): delay over.*\(last timer tick [0-9.]* ms late\).*|\1: \2|p' | tr '\n' ';')
# 50 ms, plus whatever the VM itself withheld from a real-time task at that moment
for k in "$issuep $stallp" "$issueq $stallq"; do
	echo "$k" | awk '{ exit !($1 <= 50 + $2) }' || fail "under global pressure the daemon's kill began more than 50 ms after a deadline, beyond what the VM withheld from a real-time probe: p +$issuep (probe late $stallp, pinned FIFO 99 $pinp), q +$issueq (probe late $stallq, pinned FIFO 99 $pinq); kernel kills p +$latep q +$lateq ms; deadlines $(( (dlq - dlp) / 1000000 )) ms apart; $ticks"
done
kern_note=''
if [ "$MODE" = group ]; then
	what="the cgroup.kill writes returned at p +${donep} q +${doneq} ms; the cgroups seen empty (hogs dead) at p +${latep} q +${lateq} ms"
	awk -v a="$latep" -v b="$lateq" 'BEGIN { exit !(a > 50 || b > 50) }' && what="$what (OVER 50 ms: exit and freeing under pressure)"
else
	awk -v a="$donep" -v b="$doneq" 'BEGIN { exit !(a > 50 || b > 50) }' && kern_note=" (OVER 50 ms: the kernel's reclaim and OOM kill inside the memory.max write)"
	what="the memory.max writes returned (the kernel's kill done, usage under L) at p +${donep} q +${doneq} ms${kern_note}; the kernel's OOM kills seen by a watcher at p +${latep} q +${lateq} ms"
fi
pass "global pressure at the deadlines (filler $fill_mb MiB alive, MemAvailable $a0 -> $fill_avail after the fill, min ${amin} MiB while held${psi_dl:+, PSI full avg10 $psi_dl}; filler $fstate):" \
	"kill mode $MODE; deadlines $(( (dlq - dlp) / 1000000 )) ms apart; the daemon's kills began p +${issuep} q +${issueq} ms after their deadlines (the probes' worst wake-up meanwhile: p ${stallp} q ${stallq} ms, of the pinned SCHED_FIFO 99 ones p ${pinp} q ${pinq} ms);" \
	"$what"
