# s-procs-unknown (issue 10, deliverable 4): an unknown caller moves nothing. The daemon runs in
# its own pid namespace (and mount namespace with its own /proc; the mount propagates to the
# host through a shared /pz), so for every host process the FUSE request's pid is 0.
#  - host root opening the shadow's cgroup.procs for writing: EACCES (we cannot tell who opens);
#  - host root writing "0" (and its own pid) through a descriptor a visible process opened
#    (taken with pidfd_getfd): ESRCH, and no daemon thread changes cgroup (before the fix the
#    daemon wrote "0" itself and moved its own worker's process);
#  - legitimate: a process in the daemon's pid namespace writes "0" and moves itself.
# timeout: 90
. /oomd/lib.sh
[ -x /bin/oomdelayfs ] || skip "oomdelayfs is not built"
top=$(mkcg unk)
rel=${top#$CGROOT}
mkdir "$top/t" "$top/home" || fail "mkdir"
mkdir -p /pz && mount -t tmpfs tmpfs /pz && mount --make-shared /pz || fail "cannot make the shared /pz"
mkdir /pz/shadow
echo $$ >"$top/home/cgroup.procs" || fail "cannot place the scenario shell"
unshare -p -f --mount-proc --propagation shared /bin/oomdelayfs /pz/shadow >>/tmp/oomdelayfs.log 2>&1 &
ushare=$!
_mounted() { awk -v m="$1" '$2 == m && $3 ~ /^fuse/ {f = 1} END {exit !f}' /proc/mounts; }
wait_for 10000 _mounted /pz/shadow || { cat /tmp/oomdelayfs.log; fail "the daemon in its pid namespace did not mount /pz/shadow"; }
child_of() { grep -l "^PPid:[[:space:]]*$1\$" /proc/[0-9]*/status 2>/dev/null | head -1 | cut -d/ -f3; }
dpid=$(child_of "$ushare")
[ -n "$dpid" ] && grep -q oomdelayfs "/proc/$dpid/cmdline" || fail "cannot find the daemon (child of $ushare)"
DAEMON_PID=$dpid
cgof() { sed -n 's/^0:://p' "/proc/$1/cgroup"; }
threads_cg() { cat /proc/"$dpid"/task/*/cgroup | sed -n 's/^0:://p' | sort -u | tr '\n' ' '; }
dcg=$(threads_cg)
procs=/pz/shadow$rel/t/cgroup.procs

# host root, unknown to the daemon, opens for writing
a1=$(nsx write "$procs" 0)
[ "$a1" = EACCES ] || fail "an unknown caller's open for writing answered '$a1', not EACCES"
# a visible process opens and keeps the descriptor; the unknown host root writes through it
nsenter -t "$dpid" -p -m sh -c "exec 3>$procs; exec sleep 1000" &
ns=$!
holder_ready() { holder=$(child_of "$ns"); [ -n "$holder" ] && grep -q sleep "/proc/$holder/cmdline" && [ -e "/proc/$holder/fd/3" ]; }
wait_for 3000 holder_ready || fail "the holder in the daemon's pid namespace did not open $procs"
a2=$(nsx stealfd "$holder" 3 0)
a3=$(nsx stealfd "$holder" 3 $$)
[ "$a2" = ESRCH ] || fail "an unknown writer's '0' answered '$a2', not ESRCH"
[ "$a3" = ESRCH ] || fail "an unknown writer's pid answered '$a3', not ESRCH"
[ "$(threads_cg)" = "$dcg" ] || fail "daemon threads moved: $dcg -> $(threads_cg)"
[ "$(cgof $$)" = "$rel/home" ] || fail "the writer moved to $(cgof $$)"
[ -z "$(cat "$top/t/cgroup.procs")" ] || fail "something moved into t: $(cat "$top/t/cgroup.procs")"
# legitimate: a process the daemon sees moves itself
got=$(nsenter -t "$dpid" -p -m sh -c "echo 0 >$procs && echo ok; sed -n 's/^0:://p' /proc/self/cgroup" 2>&1)
[ "$got" = "ok
$rel/t" ] || fail "a visible caller writing 0 got '$got', not ok and $rel/t"
kill "$holder" 2>/dev/null
kill -TERM "$dpid"
wait_for 5000 dead "$dpid" || { kill -KILL "$dpid"; fail "the daemon did not stop on SIGTERM"; }
umount -l /pz/shadow 2>/dev/null
DAEMON_PID=
pass "unknown opener: $a1; unknown writer of 0 / of a pid: $a2 / $a3; daemon threads stayed in ${dcg% }; a visible caller's 0: ok"
