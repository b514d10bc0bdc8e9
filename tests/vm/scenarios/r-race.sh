# r-race (issue 19, failure 5; rules 2, 3, 4, 5, 9): every rule holds whatever the daemon is
# doing at start, and whatever usage does for a moment during a hold.
#  (a) fresh start, repeated: 600 cgroups exist already, so the adoption walk runs while the
#      shadow is served ("served first, adopted after"). Each round starts the daemon and, at
#      the round's offset (0 or 400 ms after the mount: the walk still running; or 3 s after
#      "serving", the sequence of the issue), makes a cgroup through the shadow and writes
#      memory.max = 32M and memory.oom_delay_millisecs = 1500 there. As soon as the writes
#      return the real memory.max must be L + ceiling and memory.high L; a hog is then held
#      (no kill before the deadline: rule 9), killed after it, and the audit has one record of
#      it, ended kill-kernel, held at least T from the onset the deadline counts from.
#  (b) a dip (what ended the hold of the issue 10 ms after its onset): a bystander holding
#      8 MiB in the held cgroup exits while the held task is stopped: usage is MiBs under L
#      for 300 ms, then the task pushes again. Still the same hold: no kill before the deadline.
#  (c) the same dip under oom_kill_disable 1: one hold, one record (the issue's disable hold
#      ended after 9.9 ms and started again), under_oom 1 throughout; a raise ends it.
# Figures: rounds, walk time, the knob check, kill lateness; the dip and its hold.
# timeout: 420
. /oomd/lib.sh
command -v pressure >/dev/null || skip "tests/vm/progs/pressure is not built"
L=$((32 * MiB)); T=1500
CEIL=$((64 * MiB))
uoom() { grep -q '^under_oom 1' "$1/memory.oom_control"; }
served() { grep -q 'serving ' /tmp/oomdelayfs.log; }
# records CGPATH: the audit's hold lines of a real cgroup path (oomdelayfs status)
records() { oomdelayfs status 2>/dev/null | awk -v p="$1" '$1 ~ /^[0-9]+$/ && $2 == p'; }
ended_kill() { records "$1" | grep -q ' kill-kernel '; }

# ---- 600 cgroups for the walk (in the real tree, none managed) ----
base=$(mkcg many)
echo +memory >"$base/cgroup.subtree_control" || fail "cannot enable +memory in $base"
i=0
while [ $i -lt 30 ]; do
	mkdir "$base/d$i" || fail "mkdir $base/d$i"
	j=0
	while [ $j -lt 19 ]; do mkdir "$base/d$i/c$j"; j=$((j + 1)); done
	i=$((i + 1))
done
ncg=$(find "$base" -type d | wc -l)
log "$ncg cgroups made for the walk"

# ---- (a) the fresh-start sequence, repeated ----
rounds=0; knobs=''; lates=''
for off in 0 400 serving 0 400 serving 0 400; do
	rm -f /tmp/oomdelayfs.log
	start_daemon /shadow
	case $off in
	serving) wait_for 30000 served || fail "round $rounds: no 'serving' within 30 s"; usleep 3000000 ;;
	*) usleep $((off * 1000)) ;;
	esac
	busy=$(served && echo "walk done" || echo "walk running")
	cg=$OOMD_CG/r$rounds; s=/shadow${cg#$CGROOT}
	mkdir "$s" || fail "round $rounds ($off, $busy): shadow mkdir"
	setknob "$s" memory.max "$L"
	setknob "$s" memory.oom_delay_millisecs "$T"
	rmax=$(cat "$cg/memory.max"); rhigh=$(cat "$cg/memory.high")
	[ "$rmax" = $((L + CEIL)) ] || fail "round $rounds ($off ms, $busy): real memory.max $rmax right after the writes returned, not L + ceiling"
	[ "$rhigh" = "$L" ] || fail "round $rounds ($off ms, $busy): real memory.high $rhigh right after the writes returned, not L"
	knobs="$knobs $off:$busy"
	k0=$(evkey "$cg" oom_kill)
	kill_watch "$cg"
	start_hog "$cg" 256
	# the hold's deadline (its state, or the daemon's log line once a short hold is over: a
	# loaded VM can leave this shell behind a whole 1.5 s hold)
	wait_for 30000 _has_deadline "$cg" || fail "round $rounds: no hold within 30 s: $(hold_state "$cg" "$s")"
	dlns=$(deadline_ns "$cg")
	held_until $((dlns / 1000000)) "$cg" "$k0" "$HOG_PID"
	wait_for 10000 dead "$HOG_PID" || fail "round $rounds: hog alive 10 s after the deadline"
	kl=$(kill_late "$cg" "$dlns")
	wait_for 5000 ended_kill "$cg" || fail "round $rounds: no kill-kernel record: $(records "$cg")"
	[ "$(records "$cg" | wc -l)" = 1 ] || fail "round $rounds: $(records "$cg" | wc -l) records of one hold: $(records "$cg")"
	held=$(records "$cg" | awk '{print $9}')
	awk -v h="$held" -v t="$T" 'BEGIN { exit !(h >= t) }' ||
		fail "round $rounds: the record says held $held ms for T = $T ms, killed $kl ms after the deadline"
	lates="$lates $kl"
	wait "$KW_PID" 2>/dev/null
	stop_daemon
	rmdir "$cg" || fail "round $rounds: rmdir $cg"
	rounds=$((rounds + 1))
done
walk=$(sed -n 's/.* cgroups found in \([0-9.]*\) ms.*/\1/p' /tmp/oomdelayfs.log | tail -n 1)

# ---- (b) and (c): a dip under L while the held task still pushes ----
rm -f /tmp/oomdelayfs.log
start_daemon /shadow
wait_for 30000 served || fail "(b) no 'serving' within 30 s"
# dip CG SHADOWCG NAME: a bystander of 8 MiB and a hog; at the hold, the hog stopped, the
# bystander killed, 300 ms later the hog pushes again. Sets DIP (usage under L, bytes).
dip() {
	odt hog 8 --cgroup "$1" --report "/tmp/by.$3" & by=$!
	wait_for 10000 sh -c "[ \"\$(odt progress /tmp/by.$3 2>/dev/null)\" -ge 8192 ]" || fail "($3) bystander did not touch 8 MiB"
	start_hog "$1" 256
	wait_for 30000 uoom "$2" || fail "($3) no hold within 30 s: $(hold_state "$1" "$2")"
	# As few forks as can be between STOP and CONT: after 2.1 s of quiet under L the hold ends
	# by rule (the task stopped that long gave the memory up for good), and a loaded TCG host
	# can make a shell that slow.
	ts=$(now_ms)
	kill -STOP "$HOG_PID"
	kill -KILL "$by"
	usleep 300000
	cur=$(cat "$1/memory.current")
	inhold=0
	uoom "$2" && inhold=1
	kill -CONT "$HOG_PID"
	win=$(($(now_ms) - ts))
	wait "$by" 2>/dev/null
	[ "$cur" -lt $((L - MiB)) ] || fail "($3) no dip: usage $cur 300 ms after the bystander's exit"
	DIP=$((L - cur))
	[ "$win" -lt 1800 ] || fail "($3) host too loaded: the held task was stopped for $win ms, near the 2.1 s of quiet under L that ends a hold by rule"
	[ "$inhold" = 1 ] || fail "($3) the hold ended in a dip of $DIP bytes under L while the held task was stopped ($win ms)"
}
cg=$(mkcg b); s=/shadow${cg#$CGROOT}
setknob "$s" memory.max "$L"
setknob "$s" memory.oom_delay_millisecs 3000
k0=$(evkey "$cg" oom_kill)
kill_watch "$cg"
dip "$cg" "$s" b
dipb=$DIP
dlns=$(deadline_ns "$cg")
held_until $((dlns / 1000000)) "$cg" "$k0" "$HOG_PID"
wait_for 10000 dead "$HOG_PID" || fail "(b) hog alive 10 s after the deadline"
klb=$(kill_late "$cg" "$dlns")
wait_for 5000 ended_kill "$cg" || fail "(b) no kill-kernel record: $(records "$cg")"
[ "$(records "$cg" | wc -l)" = 1 ] || fail "(b) $(records "$cg" | wc -l) records of one hold: $(records "$cg")"

cg=$(mkcg c); s=/shadow${cg#$CGROOT}
setknob "$s" memory.max "$L"
setknob "$s" memory.oom_control 1
dip "$cg" "$s" c
dipc=$DIP
n=0
while [ $n -lt 20 ]; do # 2 s of the pushing task held
	uoom "$s" || fail "(c) under_oom 0 $((n * 100)) ms after the task pushed again (oom_kill_disable 1)"
	usleep 100000; n=$((n + 1))
done
alive "$HOG_PID" || fail "(c) the hog died under oom_kill_disable 1"
[ "$(records "$cg" | wc -l)" = 1 ] || fail "(c) $(records "$cg" | wc -l) records of one disable hold: $(records "$cg")"
setknob "$s" memory.max $((512 * MiB))
wait_for 3000 sh -c "! grep -q '^under_oom 1' $s/memory.oom_control" || fail "(c) under_oom still 1 3 s after the raise"
end_c=$(records "$cg" | awk '{print $8}')
[ "$end_c" = raise ] || fail "(c) the disable hold ended as '$end_c', not raise: $(records "$cg")"
kill "$HOG_PID"; wait "$HOG_PID" 2>/dev/null
stop_daemon
pass "$rounds fresh starts over $ncg cgroups (walk $walk ms), real knobs L + ceiling and L as the writes returned at$knobs;" \
	"each held T and killed after the deadline (ms late:$lates), one record each held >= T;" \
	"(b) dip of $((dipb / 1024)) KiB under L for 300 ms: same hold, killed $klb ms after the deadline;" \
	"(c) disable hold through a dip of $((dipc / 1024)) KiB: one record, ended by a raise"
