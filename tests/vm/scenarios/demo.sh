# demo: what scripts/run.sh shows on a host without a cgroup-v2 memory controller. The
# shadow tree of the VM's cgroup-v2 tree is mounted on /shadow; a cgroup with a 32 MiB limit
# and a 5 s OOM delay runs a hog; a v1-style handler notices under_oom, looks at oomdelayfs status
# and raises the limit.
# timeout: 90
. /oomd/lib.sh
say() { echo "demo: $*"; }
start_daemon /shadow
cg=$(mkcg app); s=/shadow${cg#$CGROOT}
say "the shadow tree of /sys/fs/cgroup is mounted on /shadow:"
grep " /shadow " /proc/mounts
say "synthetic files of $s:"
ls -l "$s" | grep -e oom_ -e event_control -e 'memory.max$' -e 'memory.high$'
say "echo 32M > memory.max; echo 5000 > memory.oom_delay_millisecs"
setknob "$s" memory.max 32M
setknob "$s" memory.oom_delay_millisecs 5000
say "shadow memory.max reads $(cat "$s/memory.max"); the real one holds L + ceiling: $(cat "$cg/memory.max"), real memory.high $(cat "$cg/memory.high")"
say "starting a hog of anonymous memory in the cgroup"
start_hog "$cg" 48 --exit
uoom() { grep -q '^under_oom 1' "$1/memory.oom_control"; }
wait_for 30000 uoom "$s" || fail "no hold within 30 s: $(hold_state "$cg" "$s")"
say "the cgroup hit its limit and is held:"
sed 's/^/    /' "$s/memory.oom_control"
say "what the daemon reports (oomdelayfs status, over its socket):"
oomdelayfs status | sed 's/^/    /'
say "memory.oom_delay_millisecs now reads $(cat "$s/memory.oom_delay_millisecs") (one-shot); the handler raises the limit:"
setknob "$s" memory.max 96M
wait "$HOG_PID"; rc=$?
say "the hog finished with exit status $rc; memory.oom_control:"
sed 's/^/    /' "$s/memory.oom_control"
[ "$rc" = 0 ] || fail "the hog was killed"
ended() { oomdelayfs status | grep -q " raise "; }
wait_for 5000 ended || fail "status has no record of the hold's end"
say "the hold's record (oomdelayfs status) and the daemon's log lines of it:"
oomdelayfs status | sed -n '/^HOLD/,$p' | sed 's/^/    /'
grep -e 'hold 1 ' /tmp/oomdelayfs.log | sed 's/^/    /'
stop_daemon
pass "held at 32 MiB, released by raising the limit, no kill"
