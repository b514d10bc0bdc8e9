# s-charge-orphan (issue 21: "no control channel of ours is reachable"): a child born frozen
# must not keep the daemon's descriptors. A tenant's setxattr and mkdir through the shadow
# run in a child placed in the tenant's cgroup (fs/charge.h). Made by the daemon, that child
# was born with a copy of the daemon's descriptor table, /dev/fuse included; born into a cgroup
# its tenant froze, it never ran until the thaw (the v2 freezer traps it before user space),
# so if the daemon then died with no service manager holding the connection (no --supervise,
# no fd store), the frozen child kept /dev/fuse open: the mount was not aborted (callers hung
# instead of getting ENOTCONN) and a restarted daemon found it busy. Now the children are the
# charge zygote's (fs/zygote.h), whose table holds a few descriptors and never /dev/fuse, and
# the zygote kills its children in flight when the daemon's end of its socket closes.
# The attack: the daemon (no --supervise) is stopped while uid 1000's setxattr on t/w/a
# reaches its queue, uid 1000 freezes t/w, the daemon continues: the call's child is born in
# the frozen t/w. Root queues a setxattr on the same node behind it (the node's inode lock: a
# blocked caller) and SIGKILLs the daemon.
# Passes when: the frozen child holds no /dev/fuse; within 5 s of the kill the blocked caller
# gets ECONNABORTED (fuse_abort_conn ends the requests in flight so; 6.12) and a new access
# ENOTCONN: the mount is aborted; a daemon started again while t/w is
# still frozen serves the mount; then the legitimate charged calls of an unfrozen tenant
# (uid 1001: mkdir and two 64 KiB user.* values on each of 6 cgroups) work and are charged
# to the tenant, not to the daemon's cgroup (as s-charge checks: the tenant's memory.current
# grows, the daemon's cgroup by under 2 MiB).
# Figures: the frozen child's descriptors (count, /dev/fuse or not) and whether it outlived
# the daemon; the blocked caller's and the new access's answer and time; the restart's time;
# the tenant's and the daemon's growth; a charged mkdir's and setxattr's time.
# timeout: 150
. /oomd/lib.sh
start_daemon /shadow
t=$(mkcg t)
echo +memory >"$t/cgroup.subtree_control" || fail "+memory in $t"
delegate "$t" 1000
odt asuser 1000 1000 mkdir "$t/w" || fail "uid 1000 cannot make $t/w"
odt asuser 1000 1000 mkdir "$t/w/a" || fail "uid 1000 cannot make $t/w/a"
st=/shadow${t#$CGROOT}
ls "$st/w/a" >/dev/null || fail "the shadow does not show $st/w/a"
in_setxattr() { read -r _n _r <"/proc/$1/syscall" 2>/dev/null && [ "$_n" = 188 ]; }
# frozen_child: a child of the daemon or its zygote in t/w (prints its pid)
frozen_child() {
	_par=$(charge_parents | tr '\n' ' ')
	for _p in $(cat "$t/w/cgroup.procs"); do
		_pp=$(awk '$1 == "PPid:" { print $2 }' "/proc/$_p/status" 2>/dev/null)
		case " $_par " in *" $_pp "*) echo "$_p"; return 0 ;; esac
	done
	return 1
}
has_child() { frozen_child >/dev/null; }
kill -STOP "$DAEMON_PID" || fail "cannot stop the daemon"
sh -c "echo \$\$ >$t/w/cgroup.procs && exec odt asuser 1000 1000 odt xattr set $st/w/a user.a v" \
	>/tmp/att.out 2>&1 &
ap=$!
wait_for 20000 in_setxattr "$ap" || { kill -CONT "$DAEMON_PID"; fail "the call did not reach the kernel in 20 s"; }
odt asuser 1000 1000 sh -c "echo 1 >$t/w/cgroup.freeze" || { kill -CONT "$DAEMON_PID"; fail "uid 1000 cannot freeze $t/w"; }
kill -CONT "$DAEMON_PID"
wait_for 1500 has_child || fail "no child of the daemon's charged call in the frozen t/w within 1.5 s"
c=$(frozen_child)
# the blocked caller: root's setxattr on the same node, behind the tenant's on its inode lock
(a=$(now_ms); o=$(odt xattr set "$st/w/a" user.root r 2>&1); rc=$?; echo "$(($(now_ms) - a)) $rc $o" >/tmp/blk.out) &
bp=$!
# the child's descriptors (a copy of its parent's table at its birth), meanwhile
cpar=$(awk '$1 == "PPid:" { print $2 }' "/proc/$c/status")
fds=$(ls -l "/proc/$c/fd" 2>/dev/null | awk '/->/ { print $(NF - 2) ":" $NF }')
nfd=$(ls "/proc/$c/fd" 2>/dev/null | wc -l)
fuse=$(echo "$fds" | grep -c ':/dev/fuse$')
fds=$(echo "$fds" | tr '\n' ' ')
dfd=$(ls "/proc/$DAEMON_PID/fd" | wc -l)
log "the frozen child $c (parent $cpar; the daemon $DAEMON_PID has $dfd descriptors): $nfd descriptors, $fuse of them /dev/fuse: $fds"
alive "$bp" || log "note: root's setxattr ended before the kill: $(cat /tmp/blk.out)"
frozen_child >/dev/null || fail "the frozen child is gone before the kill (time-out 2000 ms): the attack did not hold"
t0=$(now_ms)
kill_daemon
kms=$(($(now_ms) - t0))
# a new access
(a=$(now_ms); o=$(ls "$SHADOW" 2>&1 >/dev/null); rc=$?; echo "$(($(now_ms) - a)) $rc $o" >/tmp/new.out) &
np=$!
wait_for 5000 dead "$bp"; wait_for 5000 dead "$np"
blk=$(cat /tmp/blk.out 2>/dev/null || echo "still blocked 5 s after the kill")
new=$(cat /tmp/new.out 2>/dev/null || echo "still blocked 5 s after the kill")
outlived=no
[ -d "/proc/$c" ] && [ "$(awk '$1 == "State:" { print $2 }' "/proc/$c/status")" != Z ] && outlived=yes
log "after the kill (SIGKILL took $kms ms): the frozen child outlived the daemon: $outlived;" \
	"the blocked caller: $blk; a new access: $new"
bad=''
[ "$fuse" -eq 0 ] || bad="$bad; the frozen child holds /dev/fuse ($nfd descriptors)"
case $blk in *"connection abort"*|*"not connected"*) ;; *) bad="$bad; the blocked caller: '$blk', not ECONNABORTED" ;; esac
case $new in *"not connected"*) ;; *) bad="$bad; a new access: '$new', not ENOTCONN" ;; esac
# a daemon started again while t/w is still frozen
r0=$(now_ms)
n0=$(grep -c 'serving ' /tmp/oomdelayfs.log)
_launch_daemon
if wait_for 15000 _served "$n0" && ls "$st/w" >/dev/null 2>&1; then
	rms=$(($(now_ms) - r0))
	log "restarted and serving in $rms ms (t/w still frozen)"
else
	bad="$bad; a restarted daemon does not serve the mount: $(tail -n 3 /tmp/oomdelayfs.log | tr '\n' ' ')"
fi
odt asuser 1000 1000 sh -c "echo 0 >$t/w/cgroup.freeze" 2>/dev/null || echo 0 >"$t/w/cgroup.freeze"
if [ -n "$bad" ]; then
	for a in /sys/fs/fuse/connections/*/abort; do [ -e "$a" ] && echo 1 >"$a" 2>/dev/null; done
	fail "${bad#; }"
fi
wait "$ap"
log "the tenant's own call, after the thaw: $(tr '\n' ' ' </tmp/att.out)"
alive "$DAEMON_PID" || fail "the restarted daemon died: $(tail -n 5 /tmp/oomdelayfs.log)"
# the legitimate charged calls of an unfrozen tenant, charged to it
dg=$(mkcg daemon)
for p in $(charge_parents); do echo "$p" >"$dg/cgroup.procs" || fail "cannot move $p into $dg"; done
u=$(mkcg u)
echo $((64 * MiB)) >"$u/memory.max" || fail "memory.max of $u"
mkdir "$u/w" || fail "mkdir $u/w"
echo +memory >"$u/cgroup.subtree_control" || fail "+memory in $u"
delegate "$u" 1001
su=/shadow${u#$CGROOT}
cat "/shadow${dg#$CGROOT}/memory.current" "$su/memory.current" >/dev/null
odt sleep 1000
d0=$(current "$dg"); u0=$(current "$u")
o=$(sh -c "echo \$\$ >$u/w/cgroup.procs && exec odt asuser 1001 1001 sh -c '
	i=0; a=\$(odt now)
	while [ \$i -lt 6 ]; do mkdir $su/k\$i || { echo mkdir k\$i failed; exit 1; }; i=\$((i + 1)); done
	b=\$(odt now); i=0
	while [ \$i -lt 6 ]; do odt xattr set $su/k\$i user.small s || exit 1; i=\$((i + 1)); done
	c=\$(odt now); echo ms \$((b - a)) \$((c - b))
	i=0
	while [ \$i -lt 6 ]; do xfill $su/k\$i 2 65536; i=\$((i + 1)); done'" 2>&1)
odt sleep 1000
d1=$(current "$dg"); u1=$(current "$u")
mkms=$(echo "$o" | awk '$1 == "ms" { printf "%.1f", $2 / 6 }')
sxms=$(echo "$o" | awk '$1 == "ms" { printf "%.1f", $3 / 6 }')
nset=$(echo "$o" | awk '$1 == "set" { s += $2 } END { print s + 0 }')
dd=$((d1 - d0)); ud=$((u1 - u0))
log "uid 1001: $(echo "$o" | tr '\n' ' '); daemon +$(mib $dd) MiB, tenant +$(mib $ud) MiB"
i=0
while [ $i -lt 6 ]; do
	[ "$(stat -c %u "$u/k$i")" = 1001 ] || fail "$u/k$i is not uid 1001's: $(ls -ldn "$u/k$i" 2>&1)"
	[ "$(odt xattr get "$u/k$i" user.small)" = s ] || fail "the real tree lacks user.small on $u/k$i"
	i=$((i + 1))
done
[ "$dd" -lt $((2 * MiB)) ] || fail "the daemon's cgroup grew by $(mib $dd) MiB for uid 1001's calls (tenant +$(mib $ud) MiB)"
min=$((128 * 1024)) # 6 cgroups' memcg structures (6.1 charges no xattr value; s-charge: 50 KiB each)
[ "$OOMD_KERNEL" = 6.1 ] || min=$((1 * MiB)) # and 12 values of 64 KiB (s-charge: 130 KiB each)
[ "$ud" -ge "$min" ] || fail "uid 1001 was charged only $(mib $ud) MiB for 6 cgroups and $nset values of 64 KiB"
stop_daemon
pass "the frozen child: $nfd descriptors, $fuse /dev/fuse (the daemon: $dfd), outlived the daemon: $outlived;" \
	"after the SIGKILL the blocked caller got '${blk#* * }' in ${blk%% *} ms, a new access '${new#* * }' in ${new%% *} ms;" \
	"restarted with t/w frozen in $rms ms; uid 1001: mkdir $mkms ms, setxattr $sxms ms each," \
	"tenant +$(mib $ud) MiB, daemon +$(mib $dd) MiB"
