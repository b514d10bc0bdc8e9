# s-mntns (issue 21, deliverable 4, round three): the shadow inside a container's mount
# namespace. A "runtime" (root, a mount namespace of its own) puts the real cgroup box under
# /ctr/sys and binds the shadow of box over it, as the OCI hook does; the container is uid 1000
# in a user and mount namespace of its own (unshare -Urm, propagation shared: its best try),
# root inside, owning box (delegated) and nothing else. The host's /shadow is a shared mount.
# Attacks, each with v1's / the kernel's answer:
#  - umount (and umount -l) of the shadow at /ctr/sys, to reach the real box beneath, and of
#    /shadow: EINVAL (mounts that came from a more privileged namespace are locked together);
#    the shadow's memory.oom_delay_millisecs is still there;
#  - a remount read-write of a read-only bind of the shadow (as Docker and CRI make the
#    container's /sys/fs/cgroup): EPERM (the read-only flag is locked too), writes EROFS;
#  - a bind of a shadow subdirectory (c1, its own) at /ctr/b: ".." from it is /ctr, never box;
#    through it the container writes c1's delay (legitimate: it made c1), but not box's own
#    delay (EACCES: memory.max is root's, outside its user namespace), nor, through a bind of
#    the neighbour's shadow directory, the neighbour's memory.oom_control (EACCES);
#  - tmpfs mounts on a shadow directory, at /ctr/sys/c2 and at /shadow/.../box/c2: none appears
#    in the host's mount table (a less privileged copy's shared mounts become slaves);
#  - its own FUSE server (hellofs, never answering GETATTR or FLUSH) mounted over the box's
#    directory under /shadow, 200 more bind mounts in its table, and a recursive bind of
#    /ctr/sys into /ctr/sys/c1, a walk of that loop by the container;
#  - meanwhile it registers an OOM listener on box through /ctr/sys (the daemon reads the
#    caller's mountinfo, now a line at a time: legitimate, it must work and be quick).
# The host: its /shadow shows box and c2's cgroup files, hellofs got no request from the
# daemon, a walk of /shadow answers, and a hog over the neighbour's L is killed on time.
# Figures: the registration's time with the container's mounts, the host's walk, the kill.
# timeout: 120
. /oomd/lib.sh
[ -e /proc/sys/kernel/unprivileged_userns_clone ] && echo 1 >/proc/sys/kernel/unprivileged_userns_clone
start_daemon /shadow
mount --make-shared /shadow || fail "cannot make /shadow shared"
L=$((32 * MiB))
box=$(mkcg box); sbox=/shadow${box#$CGROOT}
nb=$(mkcg nb); snb=/shadow${nb#$CGROOT}
setknob "$snb" memory.max "$L"
setknob "$snb" memory.oom_delay_millisecs 600
echo +memory >"$box/cgroup.subtree_control" || fail "cannot enable memory below box"
delegate "$box" 1000
mkdir -p /ctr/sys /ctr/ro /ctr/b /ctr/n /ctr/e
out=/tmp/mntns.out
: >"$out"
chown 1000:1000 "$out"
rm -f /tmp/mntns.ready /tmp/mntns.hf
{
	echo "SB=$sbox SN=$snb OUT=$out"
	cat <<'EOF'
say() { echo "$*" >>"$OUT"; }
err() { "$@" 2>&1 >/dev/null | sed -n 's/.*: \([A-Z][a-z].*\)$/\1/p' | tail -n 1; }
say "whoami $(id -u)"
say "umount-ctr $(err umount /ctr/sys)"
say "umount-l-ctr $(err umount -l /ctr/sys)"
say "umount-shadow $(err umount /shadow)"
# busybox says "permission denied (are you root?)" for the kernel's EPERM
say "remount-rw $(mount -o remount,bind,rw /ctr/ro 2>&1 | grep -c 'permission denied')"
awk '$5 == "/ctr/ro" && $6 ~ /^ro/ {f = 1} END {exit !f}' /proc/self/mountinfo && say "ro-still yes"
say "ro-write $(err sh -c 'echo 1 >/ctr/ro/memory.oom_delay_millisecs')"
[ -e /ctr/sys/memory.oom_delay_millisecs ] && say "still-shadow yes"
mkdir /ctr/sys/c1 /ctr/sys/c2 && say "mkdir ok"
mount -o bind /ctr/sys/c1 /ctr/b && say "bind-c1 ok"
[ -e /ctr/b/../sys ] && [ -e /ctr/b/../b ] && [ ! -e /ctr/b/../memory.oom_control ] && say "dotdot ctr"
(cd /ctr/b/.. && say "dotdot-pwd $(pwd -P)")
echo 500 2>/dev/null >/ctr/b/memory.oom_delay_millisecs && say "c1-delay ok"
say "box-delay $(err sh -c 'echo 500 >/ctr/sys/memory.oom_delay_millisecs')"
mount -o bind "$SN" /ctr/n && say "bind-nb ok"
say "nb-oom_control $(err sh -c 'echo 1 >/ctr/n/memory.oom_control')"
say "nb-max $(err sh -c 'echo max >/ctr/n/memory.max')"
mount -t tmpfs ctrtmp1 /ctr/sys/c2 && say "tmpfs-ctr ok"
mount -t tmpfs ctrtmp2 "$SB/c2" && say "tmpfs-shadow ok"
HELLOFS_HANG=1 hellofs "$SB" -f 2>/tmp/mntns.hf &
i=0
while [ $i -lt 50 ] && ! grep -q " $SB fuse" /proc/self/mounts; do usleep 100000; i=$((i + 1)); done
grep -q " $SB fuse" /proc/self/mounts && say "hellofs ok"
# on a private tmpfs: a bind stacked on a shared mount propagates to every earlier one and
# the count doubles each time (the first run of this scenario hit fs.mount-max, ENOSPC, and
# spent its 60 s there); here the table grows by one a bind
mount -t tmpfs e /ctr/e && mount --make-private /ctr/e && mkdir /ctr/e/d || say "e failed"
i=0
while [ $i -lt 200 ]; do mount -o bind /ctr/e/d /ctr/e/d || break; i=$((i + 1)); done
say "binds $i mounts $(wc -l </proc/self/mountinfo)"
mount -o rbind /ctr/sys /ctr/sys/c1 && say "rbind-loop ok"
say "walk $(find /ctr/sys -maxdepth 5 2>/dev/null | wc -l)"
t0=$(odt now)
v1listener /ctr/sys --timeout 600000 --ready /tmp/mntns.reg >/tmp/mntns.lis 2>&1 &
i=0
while [ $i -lt 200 ] && [ ! -e /tmp/mntns.reg ]; do usleep 50000; i=$((i + 1)); done
[ -e /tmp/mntns.reg ] && say "register ok $(awk -v a="$t0" -v b="$(odt now)" 'BEGIN{printf "%.0f", b - a}') ms" ||
	say "register failed $(cat /tmp/mntns.lis)"
touch /tmp/mntns.ready
sleep 600
EOF
} >/tmp/mntns-ctr.sh
chmod 755 /tmp/mntns-ctr.sh
unshare -m --propagation shared sh -c "mount -o bind '$box' /ctr/sys && mount -o bind '$sbox' /ctr/sys &&
	mount -o bind '$sbox' /ctr/ro && mount -o remount,bind,ro /ctr/ro &&
	exec odt asuser 1000 1000 unshare -Urm --propagation shared sh /tmp/mntns-ctr.sh" 2>/tmp/mntns.err &
CP=$!
wait_for 60000 test -e /tmp/mntns.ready || fail "the container did not finish within 60 s: $(tr '\n' ';' <"$out") $(cat /tmp/mntns.err)"
cat "$out"
expect() { grep -qx "$1" "$out" || fail "container: expected '$1': $(tr '\n' ';' <"$out")"; }
expect "whoami 0"
expect "umount-ctr Invalid argument"
expect "umount-l-ctr Invalid argument"
expect "umount-shadow Invalid argument"
expect "remount-rw 1"
expect "ro-still yes"
expect "ro-write Read-only file system"
expect "still-shadow yes"
expect "mkdir ok"
expect "bind-c1 ok"
expect "dotdot ctr"
expect "dotdot-pwd /ctr"
expect "c1-delay ok"
expect "box-delay Permission denied"
expect "bind-nb ok"
expect "nb-oom_control Permission denied"
expect "nb-max Permission denied"
expect "tmpfs-ctr ok"
expect "tmpfs-shadow ok"
expect "hellofs ok"
expect "rbind-loop ok"
grep -q "^register ok " "$out" || fail "the container's OOM listener on box did not register: $(grep register "$out")"
reg=$(sed -n 's/^register ok \([0-9]*\) ms/\1/p' "$out")
mounts=$(sed -n 's/^binds [0-9]* mounts \([0-9]*\)/\1/p' "$out")
[ "$(cat "$box/c1/memory.max")" = max ] || fail "c1's real memory.max changed: $(cat "$box/c1/memory.max")"
[ "$(cat "$snb/memory.max")" = "$L" ] || fail "nb's memory.max changed"
grep -q '^oom_kill_disable 0' "$snb/memory.oom_control" || fail "nb's oom_control changed"
# the host's view
grep -q 'ctrtmp\|hellofs' /proc/self/mountinfo && fail "a container mount propagated to the host: $(grep 'ctrtmp\|hellofs' /proc/self/mountinfo)"
[ -e "$sbox/memory.oom_control" ] && [ -e "$sbox/c2/memory.max" ] || fail "the host's /shadow does not show box and c2"
t0=$(now_ms)
nw=$(find /shadow -maxdepth 6 | wc -l)
tw=$(($(now_ms) - t0))
kl=$(killed_on_time "$nb" "$snb")
grep -q 'left unanswered' /tmp/mntns.hf && fail "the daemon sent the container's FUSE server a request: $(cat /tmp/mntns.hf)"
alive "$DAEMON_PID" || fail "the daemon died"
for p in $(pgrep hellofs); do kill -KILL "$p"; done
kill -KILL "$CP" 2>/dev/null
for p in $(pgrep -f mntns-ctr.sh); do kill -KILL "$p"; done
stop_daemon
pass "container (uid 1000, own user+mount ns): umount of the shadow EINVAL (locked); '..' from a" \
	"bind of c1 is /ctr; box's delay and the neighbour's knobs EACCES through binds; tmpfs and" \
	"FUSE mounts on shadow dirs stay in its namespace; its listener registered in $reg ms with" \
	"$mounts mounts in its table; host walk of /shadow $nw entries in $tw ms; kill +$kl ms"
