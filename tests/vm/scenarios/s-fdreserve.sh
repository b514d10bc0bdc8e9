# s-fdreserve (issue 10, deliverable 5): descriptors are kept in reserve for the kill path.
# With fs.nr_open at 4096 the daemon's RLIMIT_NOFILE is 4096 and requests may never take a
# descriptor numbered in the top 1024 (FS_FD_RESERVE_MIN). uid 1000 opens a shadow file
# 4000 times in one process (its own limit raised to 4096): the daemon answers EMFILE before
# that, below 3072 opens; while it holds them a listener registration of uid 1001 fails with
# EMFILE too, and a hold (T = 600 ms, L = 32 MiB; the kill path opens 7 files of the cgroup)
# is still killed on time. Once uid 1000's process exits, uid 1001 registers.
# Figures: how many opens uid 1000 got, the kill's lateness.
# timeout: 150
. /oomd/lib.sh
nr0=$(cat /proc/sys/fs/nr_open)
trap 'echo "$nr0" >/proc/sys/fs/nr_open' EXIT
echo 4096 >/proc/sys/fs/nr_open || fail "cannot lower fs.nr_open"
start_daemon /shadow
echo "$nr0" >/proc/sys/fs/nr_open # the daemon raised its limit already
lim=$(awk '/^Max open files/ {print $4}' "/proc/$DAEMON_PID/limits")
[ "$lim" = 4096 ] || fail "the daemon's RLIMIT_NOFILE is $lim, not 4096"
L=$((32 * MiB))
cg=$(mkcg fr); s=/shadow${cg#$CGROOT}
setknob "$s" memory.max "$L"
setknob "$s" memory.oom_delay_millisecs 600
rm -f /tmp/h.ready
odt asuser 1000 1000 evhostile hold "$s/memory.current" 4000 --ready /tmp/h.ready >/tmp/h.out 2>&1 &
HP=$!
wait_for 120000 test -e /tmp/h.ready || fail "the opener did not finish: $(cat /tmp/h.out)"
line=$(cat /tmp/h.out)
echo "$line"
got=$(echo "$line" | sed -n 's/^held \([0-9]*\) of 4000 stopped=EMFILE limit=4096$/\1/p')
[ -n "$got" ] || fail "uid 1000 was not stopped with EMFILE below its own limit: $line"
[ "$got" -lt 3072 ] || fail "uid 1000 got $got descriptors, into the reserve"
r=$(odt asuser 1001 1001 v1listener "$s" --timeout 10 2>&1)
case "$r" in *EMFILE*) ;; *) fail "uid 1001's registration with the table full: '$r', not EMFILE" ;; esac
kl=$(killed_on_time "$cg" "$s")
kill "$HP"
wait "$HP" 2>/dev/null
reg_ok() { odt asuser 1001 1001 v1listener "$s" --timeout 10 >/tmp/r.out 2>&1; grep -q '^registered' /tmp/r.out; }
wait_for 10000 reg_ok || fail "uid 1001 cannot register after uid 1000's descriptors went: $(cat /tmp/r.out)"
alive "$DAEMON_PID" || fail "the daemon died"
stop_daemon
pass "daemon limit 4096: uid 1000 held $got shadow opens, then EMFILE; uid 1001's registration EMFILE meanwhile;" \
	"kill +$kl ms after the deadline with the caller's share exhausted; uid 1001 registers once they are closed"
