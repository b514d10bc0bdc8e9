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
cg=$(mkcg p); s=/shadow${cg#$CGROOT}
setknob "$s" memory.max "$L"
setknob "$s" memory.oom_delay_millisecs 4000
a0=$(avail)
rm -f /tmp/fill.rep
pressure fill --leave 64 --churn-mb 16 --report /tmp/fill.rep &
FP=$!
wait_for 120000 test -s /tmp/fill.rep || fail "the filler did not fill memory within 120 s"
read -r fill_mb fill_avail </tmp/fill.rep
log "filler holds $fill_mb MiB; MemAvailable $a0 -> $fill_avail MiB"
k0=$(evkey "$cg" oom_kill)
start_hog "$cg" 200
wait_for 60000 uoom "$s" || fail "no hold within 60 s under global pressure"
dl=$(deadline_ns "$cg")
pressure killwatch "$cg" "$dl" --timeout 60000 >/tmp/kw.p 2>&1 &
KW=$!
amin=$(avail)
# held until the deadline (sampled every 20 ms), and the lowest MemAvailable seen meanwhile
# (the clock is read after the checks, so a slow shell never blames the daemon)
while :; do
	a=$(avail); [ "$a" -lt "$amin" ] && amin=$a
	k=$(evkey "$cg" oom_kill)
	alive "$HOG_PID" && h=1 || h=0
	t=$(pressure now | cut -d. -f1)
	[ "$t" -lt $((dl / 1000000)) ] || break
	[ "$h" = 1 ] || fail "hog died $((dl / 1000000 - t)) ms before the deadline under pressure"
	[ "$k" = "$k0" ] || fail "oom_kill moved $((dl / 1000000 - t)) ms before the deadline under pressure"
	usleep 100000
done
wait "$KW" || fail "no kill within 60 s of the deadline: $(cat /tmp/kw.p)"
read -r late _ _ _ </tmp/kw.p
wait_for 10000 dead "$HOG_PID" || fail "hog alive 10 s after the kill"
alive "$FP" && fstate="alive (holding $fill_mb MiB)" || fstate="killed by the global OOM killer"
kill "$FP" 2>/dev/null; wait "$FP" 2>/dev/null
wb=$(sed -n "s|.*$cg: delay over.*write began at boottime \\([0-9.]*\\) ms.*|\\1|p" /tmp/oomdelayfs.log | tail -n 1)
[ -n "$wb" ] || fail "no kill logged by the daemon"
issue=$(awk -v w="$wb" -v d="$dl" 'BEGIN { printf "%.1f", w - d / 1e6 }')
psi=$(sed -n 's/^full avg10=\([0-9.]*\).*/\1/p' /proc/pressure/memory 2>/dev/null)
alive "$DAEMON_PID" || fail "the daemon died under global pressure"
stop_daemon
awk -v l="$issue" 'BEGIN { exit !(l >= 0) }' || fail "the daemon's kill began $issue ms relative to the deadline: BEFORE it"
awk -v l="$late" 'BEGIN { exit !(l >= 0) }' || fail "the kernel killed $late ms relative to the deadline: BEFORE it"
awk -v l="$issue" 'BEGIN { exit !(l <= 50) }' || fail "under global pressure the daemon's kill began $issue ms after the deadline (> 50 ms); kernel kill at +$late ms"
kern_note=''
awk -v l="$late" 'BEGIN { exit !(l > 50) }' && kern_note=" (OVER 50 ms: the kernel's reclaim inside the memory.max write)"
pass "global pressure (filler $fill_mb MiB, MemAvailable $a0 -> min ${amin} MiB, filler $fstate${psi:+, PSI full avg10 $psi}):" \
	"daemon's kill began ${issue} ms after the deadline; the kernel's OOM kill seen at +${late} ms${kern_note}"
