# f-upgrade-readers (issue 20: nothing lost across a restart): a server that stops for a
# successor (the upgrade: SIGUSR2 to the supervisor) answers every request it has taken from
# the kernel before it goes. 16 readers open, read and close memory.oom_control through the
# shadow in tight loops (inflight) across 4 upgrades, 2.5 s apart: not one operation may fail
# or hang, and each upgrade must be a real one (a takeover, a new server serving). Before the
# drained stop (fs/fuse_io.h), libfuse 3.14 dropped a request its worker read as the session
# began to exit, and on a kernel without FUSE_NOTIFY_RESEND (6.1) it failed with ECONNABORTED
# when the worker's cloned descriptor closed: a v1 listener's access(2) of cgroup.event_control
# failed so in f-levels-restart (CI-like run, 6.1, 2026-12-06). A crash (SIGKILL) may still
# fail what it had taken (f-inflight); an upgrade may not.
# Figures: operations, the gaps, the slowest operation.
# timeout: 180
. /oomd/lib.sh
command -v inflight >/dev/null || skip "tests/vm/progs/inflight is not built"
start_daemon /shadow --supervise --watchdog-sec 5
cg=$(mkcg ur)
s=/shadow${cg#$CGROOT}
[ -r "$s/memory.oom_control" ] || fail "no $s/memory.oom_control"
N=4
inflight "$s/memory.oom_control" 16 $((N * 2500 + 3000)) 10000 >/tmp/ur.out 2>&1 &
IP=$!
usleep 1500000
gaps=""
i=0
while [ $i -lt $N ]; do
	gaps="$gaps $(restart_server upgrade)"
	usleep 2500000
	i=$((i + 1))
done
wait "$IP"
out=$(cat /tmp/ur.out)
echo "inflight: $out"
case "$out" in ops=*) ;; *) fail "inflight printed no counts: $out" ;; esac
val() { echo "$out" | sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p"; }
[ "$(val ops)" -gt 1000 ] || fail "only $(val ops) operations: the readers did not run across the upgrades ($out)"
[ "$(val failed)" = 0 ] || fail "$(val failed) operations failed across $N upgrades: $out"
[ "$(val hung)" = 0 ] || fail "$(val hung) operations hung across $N upgrades: $out"
[ "$(grep -c 'took over the FUSE connection' /tmp/oomdelayfs.log)" -ge $N ] || fail "fewer than $N takeovers in the log"
grep -q 'still being answered' /tmp/oomdelayfs.log && fail "a stop gave up draining: $(grep 'still being answered' /tmp/oomdelayfs.log | head -n 1)"
# the mount still answers after the last one
cat "$s/memory.oom_control" >/dev/null || fail "the shadow does not answer after the upgrades"
stop_daemon
pass "$(val ops) operations by 16 readers across $N upgrades (gaps to the takeover, ms:$gaps): 0 failed, 0 hung; slowest $(val slowest_ms) ms"
