# s-ctr (issue 10, deliverable 4): root in a container, without a user namespace (c) and with
# one mapping its root to uid 1000, the owner of the delegated box (d), moves what the kernel
# lets it move and nothing else. The container (nsx ctr) has its own cgroup, pid and mount
# namespaces, its box bind-mounted over /sys/fs/cgroup, and still sees the whole tree at $T.
# The same script runs in a container over the real tree and over the shadow; the answers must
# be equal and the expected ones:
#  - it moves its own processes between its cgroups (legitimate);
#  - a pid outside its pid namespace moves nothing (ESRCH);
#  - its process into a cgroup outside its cgroup namespace: ENOENT (nsdelegate boundary);
#  - "0" into a cgroup outside its cgroup namespace: ENOENT;
#  - a process in its pid namespace but in a cgroup outside its cgroup namespace (an intruder
#    put there from the host) into its own cgroup: ENOENT.
# (With the user namespace, uid 1000 cannot open the outside cgroup's cgroup.procs: EACCES.)
# Without the fix, root in a container wrote as the daemon (its cgroup namespace, its powers).
# timeout: 150
. /oomd/lib.sh
top=$(mkcg ctr)
rel=${top#$CGROOT}
mkdir "$top/box" "$top/box/a" "$top/box/b" "$top/out" || fail "mkdir"
sleep 1000 &
victim=$!
echo "$victim" >"$top/out/cgroup.procs" || fail "cannot place the victim"
mkdir -p /mnt/real
mount --bind "$CGROOT" /mnt/real || fail "cannot bind the real tree to /mnt/real"
cgof() { sed -n 's/^0:://p' "/proc/$1/cgroup"; }

# the container's script: T is the whole tree as seen from the container, V the victim's pid
cat >/tmp/ctr.sh <<'EOF'
sleep 1000 &
kid=$!
r1=$(nsx write /sys/fs/cgroup/a/cgroup.procs $$)
r2=$(nsx write /sys/fs/cgroup/b/cgroup.procs $kid)
w=$(sed -n 's/^0:://p' /proc/$$/cgroup),$(sed -n 's/^0:://p' /proc/$kid/cgroup)
r3=$(nsx write /sys/fs/cgroup/a/cgroup.procs "$V")
r4=$(nsx write "$T/out/cgroup.procs" $$)
r5=$(nsx write "$T/out/cgroup.procs" 0)
r6=$(nsx write "$T/out/cgroup.procs" "$V")
w2=$(sed -n 's/^0:://p' /proc/$$/cgroup)
# the intruder: in our pid namespace, in a cgroup outside our cgroup namespace
i=0
while [ ! -e /tmp/ctr.go ] && [ $i -lt 500 ]; do usleep 10000; i=$((i + 1)); done
intr=none
for p in /proc/[0-9]*; do
	case $(sed -n 's/^0:://p' "$p/cgroup" 2>/dev/null) in
	/..*) grep -q sleep "$p/cmdline" 2>/dev/null && intr=${p#/proc/} ;;
	esac
done
r7=$(nsx write /sys/fs/cgroup/a/cgroup.procs "$intr")
kill $kid
echo "own:$r1,$r2@$w foreign-pid:$r3 out:$r4 zero-out:$r5 out-foreign:$r6 stayed:$w2 src-outside:$r7"
EOF
want="own:ok,ok@/a,/b foreign-pid:ESRCH out:ENOENT zero-out:ENOENT out-foreign:ESRCH stayed:/a src-outside:ENOENT"
child_of() { grep -l "^PPid:[[:space:]]*$1\$" /proc/[0-9]*/status 2>/dev/null | head -1 | cut -d/ -f3; }
has_child() { [ -n "$(child_of "$1")" ]; }
pick_intruder() { intr=$(child_of "$nsp"); [ -n "$intr" ] && [ "$(cat "/proc/$intr/comm" 2>/dev/null)" = sleep ]; }

# run LABEL BOX TREE [-U UID]: the script in a container on BOX, the whole tree at TREE
run() {
	label=$1 box=$2 tree=$3
	shift 3
	for d in a b; do
		[ -d "$top/box/$d" ] && { wait_for 3000 rmdir "$top/box/$d" || fail "$label: cannot remove box/$d"; }
	done
	mkdir "$top/box/a" "$top/box/b" || fail "$label: mkdir a b"
	[ $# -gt 0 ] && chown -R "$2:$2" "$top/box"
	rm -f /tmp/ctr.go
	T=$tree$rel V=$victim nsx ctr "$@" "$top/box" "$box" sh /tmp/ctr.sh >/tmp/ctr.out 2>&1 &
	cpid=$!
	# an intruder enters the container's pid namespace but stays in out
	if wait_for 5000 has_child "$cpid"; then
		nsenter -t "$(child_of "$cpid")" -p sleep 1000 &
		nsp=$!
		# (the sleep itself, not a child of nsenter's on its way there: once, on 6.12,
		# the pid read back was written as EINVAL, the answer to an empty pid)
		wait_for 3000 pick_intruder || fail "$label: no intruder"
		echo "$intr" >"$top/out/cgroup.procs" ||
			fail "$label: cannot place the intruder (pid '$intr': $(cat "/proc/$intr/comm" 2>&1))"
	fi
	touch /tmp/ctr.go
	wait "$cpid"
	got=$(cat /tmp/ctr.out)
	[ "$(cgof "$victim")" = "$rel/out" ] || fail "$label: the victim moved to $(cgof "$victim")"
	[ -z "$intr" ] || [ ! -e "/proc/$intr" ] || [ "$(cgof "$intr")" = "$rel/out" ] || fail "$label: the intruder moved to $(cgof "$intr")"
	log "$label: $got" >&2
	echo "$got"
}
r_real=$(run real "$CGROOT$rel/box" /mnt/real)
[ "$r_real" = "$want" ] || fail "the real tree answers '$r_real', the scenario expects '$want'"
start_daemon /shadow
r_sh=$(run shadow "/shadow$rel/box" /shadow)
[ "$r_sh" = "$r_real" ] || fail "container root through the shadow: '$r_sh', on the real tree: '$r_real'"
stop_daemon

# (d) a user namespace: container root is uid 1000, which owns the box (delegated) and has no
# write access to the common ancestor's cgroup.procs for anything outside it (EACCES first)
want_u="own:ok,ok@/a,/b foreign-pid:ESRCH out:EACCES zero-out:EACCES out-foreign:EACCES stayed:/a src-outside:EACCES"
u_real=$(run userns-real "$CGROOT$rel/box" /mnt/real -U 1000)
case $u_real in *"nsx: unshare"*) umount /mnt/real; skip "this kernel refuses an unprivileged user namespace: $u_real" ;; esac
[ "$u_real" = "$want_u" ] || fail "userns on the real tree answers '$u_real', the scenario expects '$want_u'"
start_daemon /shadow
u_sh=$(run userns-shadow "/shadow$rel/box" /shadow -U 1000)
[ "$u_sh" = "$u_real" ] || fail "userns container root through the shadow: '$u_sh', on the real tree: '$u_real'"
stop_daemon
umount /mnt/real
kill "$victim"
pass "real tree and shadow alike; container root without a user namespace: $r_real; with one (root = uid 1000): $u_real"
