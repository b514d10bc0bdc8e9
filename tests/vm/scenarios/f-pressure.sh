# f-pressure (issue 5, deliverable 1): the daemon runs with --protect 64M (its own cgroup
# oomdelayfs.daemon, memory.min = 64 MiB) and the whole VM is driven into global memory
# pressure by `pressure fill` outside every managed cgroup (anonymous memory until
# MemAvailable is about 64 MiB, then it keeps mapping and unmapping 16 MiB so that every
# allocation goes through direct reclaim; no swap). A managed cgroup (L = 32 MiB, T = 4 s) is
# held meanwhile. Asserted: nothing killed before the deadline, the daemon's kill (its
# memory.max = L write) begins within 50 ms of the deadline. Reported: that figure, and when
# the kernel's OOM kill was seen (memory-locked inotify watcher), MemAvailable, the filler.
# timeout: 240
. /oomd/lib.sh
command -v pressure >/dev/null || skip "tests/vm/progs/pressure is not built"
uoom() { grep -q '^under_oom 1' "$1/memory.oom_control"; }
deadline_ns() {
	_d=$(odt xattr get "$1" user.oomdelayfs.state | sed -n 's/.*deadline=\([0-9]*\).*/\1/p')
	[ -n "$_d" ] || fail "no deadline in the persisted state of $1"
	echo "$_d"
}
avail() { awk '/^MemAvailable/ {print int($2 / 1024)}' /proc/meminfo; }
L=$((32 * MiB))
start_daemon /shadow --protect 64M
grep -q 'oomdelayfs.daemon' "/proc/$DAEMON_PID/cgroup" || fail "--protect: the daemon is in $(cat "/proc/$DAEMON_PID/cgroup"), not oomdelayfs.daemon"
[ "$(cat $CGROOT/oomdelayfs.daemon/memory.min)" = $((64 * MiB)) ] || fail "--protect: memory.min is $(cat $CGROOT/oomdelayfs.daemon/memory.min)"
for n in p q; do
	cg=$(mkcg $n); s=/shadow${cg#$CGROOT}
	setknob "$s" memory.max "$L"
	setknob "$s" memory.oom_delay_millisecs 4000
done
P=$OOMD_CG/p Q=$OOMD_CG/q
a0=$(avail)
rm -f /tmp/fill.rep
pressure fill --leave 64 --churn-mb 16 --report /tmp/fill.rep &
FP=$!
wait_for 120000 test -s /tmp/fill.rep || fail "the filler did not fill memory within 120 s"
read -r fill_mb fill_avail </tmp/fill.rep
log "filler holds $fill_mb MiB; MemAvailable $a0 -> $fill_avail MiB"
kp0=$(evkey "$P" oom_kill) kq0=$(evkey "$Q" oom_kill)
start_hog "$P" 200; HP=$HOG_PID
start_hog "$Q" 200; HQ=$HOG_PID
wait_for 60000 uoom "/shadow${P#$CGROOT}" || fail "p: no hold within 60 s under global pressure"
wait_for 60000 uoom "/shadow${Q#$CGROOT}" || fail "q: no hold within 60 s under global pressure"
dlp=$(deadline_ns "$P") dlq=$(deadline_ns "$Q")
pressure killwatch "$P" "$dlp" --timeout 60000 >/tmp/kw.p 2>&1 &
KP=$!
pressure killwatch "$Q" "$dlq" --timeout 60000 >/tmp/kw.q 2>&1 &
KQ=$!
[ "$dlp" -lt "$dlq" ] && dl=$dlp || dl=$dlq
amin=$(avail)
# both held until the first deadline, and the lowest MemAvailable seen meanwhile
# (the clock is read after the checks, so a slow shell never blames the daemon)
while :; do
	a=$(avail); [ "$a" -lt "$amin" ] && amin=$a
	k=$(evkey "$P" oom_kill)$(evkey "$Q" oom_kill)
	alive "$HP" && alive "$HQ" && h=1 || h=0
	t=$(pressure now | cut -d. -f1)
	[ "$t" -lt $((dl / 1000000)) ] || break
	[ "$h" = 1 ] || fail "a hog died $((dl / 1000000 - t)) ms before the deadline under pressure"
	[ "$k" = "$kp0$kq0" ] || fail "oom_kill moved $((dl / 1000000 - t)) ms before the deadline under pressure"
	usleep 100000
done
wait "$KP" || fail "p: no kill within 60 s of the deadline: $(cat /tmp/kw.p)"
wait "$KQ" || fail "q: no kill within 60 s of the deadline: $(cat /tmp/kw.q)"
read -r latep _ _ _ </tmp/kw.p
read -r lateq _ _ _ </tmp/kw.q
wait_for 10000 dead "$HP" || fail "p: hog alive 10 s after the kill"
wait_for 10000 dead "$HQ" || fail "q: hog alive 10 s after the kill"
alive "$FP" && fstate="alive (holding $fill_mb MiB)" || fstate="killed by the global OOM killer"
kill "$FP" 2>/dev/null; wait "$FP" 2>/dev/null
issue_of() { # issue_of CG DEADLINE_NS: the daemon's kill write start minus the deadline, ms
	_wb=$(sed -n "s|.*$1: delay over.*write began at boottime \([0-9.]*\) ms.*|\1|p" /tmp/oomdelayfs.log | tail -n 1)
	[ -n "$_wb" ] || fail "no kill logged by the daemon for $1"
	awk -v w="$_wb" -v d="$2" 'BEGIN { printf "%.1f", w - d / 1e6 }'
}
issuep=$(issue_of "$P" "$dlp")
issueq=$(issue_of "$Q" "$dlq")
psi=$(sed -n 's/^full avg10=\([0-9.]*\).*/\1/p' /proc/pressure/memory 2>/dev/null)
alive "$DAEMON_PID" || fail "the daemon died under global pressure"
grep -E "delay over|late|protect|oomdelayfs.daemon" /tmp/oomdelayfs.log
stop_daemon
for v in "$issuep" "$issueq" "$latep" "$lateq"; do
	awk -v l="$v" 'BEGIN { exit !(l >= 0) }' || fail "a kill came $v ms relative to its deadline: BEFORE it (daemon p $issuep q $issueq, kernel p $latep q $lateq)"
done
for v in "$issuep" "$issueq"; do
	awk -v l="$v" 'BEGIN { exit !(l <= 50) }' || fail "under global pressure the daemon's kill began $v ms after a deadline (> 50 ms): p +$issuep, q +$issueq; kernel kills p +$latep q +$lateq ms"
done
kern_note=''
awk -v a="$latep" -v b="$lateq" 'BEGIN { exit !(a > 50 || b > 50) }' && kern_note=" (OVER 50 ms: the kernel's reclaim inside the memory.max write)"
pass "global pressure (filler $fill_mb MiB, MemAvailable $a0 -> min ${amin} MiB, filler $fstate${psi:+, PSI full avg10 $psi}):" \
	"deadlines $(( (dlq - dlp) / 1000000 )) ms apart; the daemon's kills began p +${issuep} q +${issueq} ms after their deadlines;" \
	"the kernel's OOM kills seen at p +${latep} q +${lateq} ms${kern_note}"
