# s-caps (issue 21, deliverable 5): the capabilities the systemd unit keeps are enough. The
# unit (packaging/oomdelayfs.service) sets CapabilityBoundingSet= to the list below (the
# packaging test checks that the two lists are the same); here the daemon runs with only these
# in its bounding set (odt capbset: what systemd's CapabilityBoundingSet= makes of a root
# service), and does what needs each of them:
#   sys_admin        the FUSE mount (allow_other), trusted.* xattrs of its state, setns into
#                    a caller's cgroup namespace
#   dac_read_search  open_by_handle_at (a successor's revived handles)
#   dac_override, fowner, fsetid, chown   writing every cgroup's files, a caller's new cgroup
#                    given to it (fchownat), its mode kept (chmod)
#   setuid, setgid   opens made with the caller's fsuid/fsgid (setfsuid)
#   sys_ptrace       pidfd_getfd of a caller's eventfd (cgroup.event_control), /proc of others
#   sys_nice         nice -20 and SCHED_FIFO for the deadline thread and the kill guard
#   sys_resource     oom_score_adj -1000, RLIMIT_NOFILE up to fs.nr_open
# Not kill: the kernel kills (memory.max written back, or cgroup.kill, whose __cgroup_kill
# sends SIGKILL with no permission check), and the daemon signals only its own children. Not
# ipc_lock: the unit's LimitMEMLOCK=infinity lets mlockall lock everything without it
# (can_do_mlock); here `ulimit -l unlimited` stands for it. The kill below is the kernel's.
# Passes when the daemon starts with no privilege warning, its effective set is exactly the
# list, and: a delegated uid 1000 makes and labels a cgroup through the shadow (charged to it,
# given to it); uid 1000's v1 listener on a root-owned cgroup is signalled at the onset; the
# hog over L is killed on time; SIGTERM stops it.
# Figures: the kill's lateness, the listener's signal.
# timeout: 180
. /oomd/lib.sh
CAPS=chown,dac_override,dac_read_search,fowner,fsetid,setgid,setuid,sys_ptrace,sys_admin,sys_nice,sys_resource
# CAP_ numbers of the list (capability.h): the effective set the daemon must have
WANT=$(( (1 << 0) | (1 << 1) | (1 << 2) | (1 << 3) | (1 << 4) | (1 << 6) | (1 << 7) |
	(1 << 19) | (1 << 21) | (1 << 23) | (1 << 24) ))
# the unit's LimitMEMLOCK=infinity (the daemon inherits it from this shell)
ulimit -l unlimited || fail "ulimit -l unlimited"
OOMD_DAEMON_WRAP="odt capbset $CAPS" start_daemon /shadow
eff=$(awk '$1 == "CapEff:" { print $2 }' "/proc/$DAEMON_PID/status")
[ "$((0x$eff))" = "$WANT" ] || fail "the daemon's effective set is $eff, not $(printf %016x "$WANT")"
[ "$(cat "/proc/$DAEMON_PID/oom_score_adj")" = -1000 ] || fail "oom_score_adj $(cat "/proc/$DAEMON_PID/oom_score_adj")"
# daemon/startup.c's and ctl_lock.c's warnings when a privileged step fails (their errno
# need not say "not permitted": mlockall answers ENOMEM past RLIMIT_MEMLOCK)
PRIVWARN='not permitted|permission denied|cannot (lock|set)|mlockall|RLIMIT_MEMLOCK|RLIMIT_NOFILE stays|oom_score_adj =|setpriority|SCHED_FIFO priority'
grep -iE "$PRIVWARN" /tmp/oomdelayfs.log &&
	fail "a privilege the daemon wanted is missing: $(grep -iE "$PRIVWARN" /tmp/oomdelayfs.log | head -3)"
# mlockall locked it (no CAP_IPC_LOCK: the unlimited RLIMIT_MEMLOCK above)
lck=$(awk '$1 == "VmLck:" { print $2 }' "/proc/$DAEMON_PID/status")
[ "${lck:-0}" -gt 0 ] || fail "the daemon's memory is not locked (VmLck ${lck:-?} kB)"
# a delegated tenant makes and labels a cgroup through the shadow
t=$(mkcg t)
echo +memory >"$t/cgroup.subtree_control" || fail "+memory in $t"
delegate "$t" 1000
odt asuser 1000 1000 mkdir "$t/w" || fail "uid 1000 cannot make $t/w"
st=/shadow${t#$CGROOT}
o=$(sh -c "echo \$\$ >$t/w/cgroup.procs && exec odt asuser 1000 1000 sh -c 'mkdir $st/c && odt xattr set $st/c user.note hi && odt xattr get $st/c user.note'" 2>&1)
[ "$o" = hi ] || fail "uid 1000 could not make and label a cgroup: '$o' ($(tail -n 3 /tmp/oomdelayfs.log))"
[ "$(stat -c %u "$t/c")" = 1000 ] || fail "$t/c is not uid 1000's: $(ls -ldn "$t/c")"
# uid 1000's v1 listener on a root-owned cgroup, then the onset and the kill there
x=$(mkcg x); sx=/shadow${x#$CGROOT}
setknob "$sx" memory.max $((32 * MiB))
setknob "$sx" memory.oom_delay_millisecs 600
rm -f /tmp/caps.ready
odt asuser 1000 1000 v1listener "$sx" --count 1 --timeout 60000 --ready /tmp/caps.ready >/tmp/caps.l 2>&1 &
LPID=$!
wait_for 5000 test -e /tmp/caps.ready || fail "uid 1000's listener did not register: $(cat /tmp/caps.l)"
kl=$(killed_on_time "$x" "$sx")
wait "$LPID"; lrc=$?
grep -q '^signal 1 ' /tmp/caps.l || fail "uid 1000's listener was not signalled (exit $lrc): $(cat /tmp/caps.l)"
stop_daemon
[ "$DAEMON_STOP" = term ] || fail "the daemon did not stop on SIGTERM ($DAEMON_STOP)"
grep -iE "$PRIVWARN" /tmp/oomdelayfs.log &&
	fail "a privilege was missing on the way: $(grep -iE "$PRIVWARN" /tmp/oomdelayfs.log | head -3)"
pass "effective set $eff (the unit's 11); VmLck $lck kB; uid 1000's mkdir+label and listener work; kill +$kl ms; stopped on SIGTERM"
