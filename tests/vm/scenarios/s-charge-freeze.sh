# s-charge-freeze (issue 21; the review of stop 24): a tenant freezes its own cgroup under
# its charged calls. fs/charge.c makes a tenant's setxattr and mkdir in a child placed in the
# tenant's cgroup. The first version waited for that child with CLONE_VFORK: a tenant that
# owns its cgroup.freeze froze the cgroup between its request and the clone, the child was
# frozen before it ran, and the FUSE worker waited in the kernel's vfork wait until the thaw
# (a worker per request, for as long as the tenant liked). Now the worker waits at most
# FS_CHARGE_TIMEOUT_MS (2 s), SIGKILLs and reaps the child and answers EAGAIN; at most 2 of
# one uid's charged calls run at once (the rest EAGAIN at once).
# The race is made certain: the daemon is stopped (SIGSTOP) while uid 1000's six setxattr
# calls reach its queue, uid 1000 freezes its cgroup t/w, the daemon continues: each child
# is made in a frozen cgroup. Passes when: at most 2 of the daemon's children are ever in t/w,
# none is left 2 s + 3 s after the daemon continued while t/w stays frozen 8 s, and
# every attacker call ends in EAGAIN (after the thaw: its thread is frozen until then).
# The legitimate actions beside: during the freeze uid 1001 makes and labels a cgroup of its
# own through the shadow, root reads a shadow file; after the thaw uid 1000 labels its own
# cgroup; a hog over L in a managed cgroup is killed on time.
# Figures: children seen, when the last went, uid 1001's call time, attackers' answers.
# timeout: 180
. /oomd/lib.sh
start_daemon /shadow
t=$(mkcg t)
echo +memory >"$t/cgroup.subtree_control" || fail "+memory in $t"
delegate "$t" 1000
odt asuser 1000 1000 mkdir "$t/w" || fail "uid 1000 cannot make $t/w"
st=/shadow${t#$CGROOT}
u=$(mkcg u)
mkdir "$u/w" || fail "mkdir $u/w"
echo +memory >"$u/cgroup.subtree_control" || fail "+memory in $u"
delegate "$u" 1001
su=/shadow${u#$CGROOT}
ls "$st/w" >/dev/null && ls "$su" >/dev/null || fail "the shadow does not show $st/w or $su"
# the daemon's children in cgroup $1 (the charged calls' children)
kids() { for p in $(cat "$1/cgroup.procs"); do
	[ "$(awk '$1 == "PPid:" { print $2 }' "/proc/$p/status" 2>/dev/null)" = "$DAEMON_PID" ] && echo "$p"
done | wc -l; }
kill -STOP "$DAEMON_PID" || fail "cannot stop the daemon"
i=0; apids=''
while [ $i -lt 6 ]; do
	sh -c "echo \$\$ >$t/w/cgroup.procs && exec odt asuser 1000 1000 odt xattr set $st/w user.a$i v" \
		>/tmp/att.$i 2>&1 &
	apids="$apids $!"
	i=$((i + 1))
done
odt sleep 700 # the six reach the daemon's queue
odt asuser 1000 1000 sh -c "echo 1 >$t/w/cgroup.freeze" || { kill -CONT "$DAEMON_PID"; fail "uid 1000 cannot freeze $t/w"; }
t0=$(now_ms)
kill -CONT "$DAEMON_PID"
maxk=0; last=0; u1=''
while [ $(($(now_ms) - t0)) -lt 8000 ]; do
	k=$(kids "$t/w")
	[ "$k" -gt "$maxk" ] && maxk=$k
	[ "$k" -gt 0 ] && last=$(($(now_ms) - t0))
	if [ -z "$u1" ] && [ "$maxk" -gt 0 ]; then # the legitimate actions while the children are frozen
		a=$(now_ms)
		o=$(sh -c "echo \$\$ >$u/w/cgroup.procs && exec odt asuser 1001 1001 sh -c 'mkdir $su/k && odt xattr set $su/k user.note hello && odt xattr get $su/k user.note'" 2>&1)
		u1=$(($(now_ms) - a))
		[ "$o" = hello ] || { echo 0 >"$t/w/cgroup.freeze"; fail "uid 1001 could not make and label a cgroup during the freeze: '$o'"; }
		cat "/shadow${u#$CGROOT}/memory.oom_control" >/dev/null ||
			{ echo 0 >"$t/w/cgroup.freeze"; fail "root cannot read a shadow file during the freeze"; }
	fi
	odt sleep 100
done
kleft=$(kids "$t/w")
if [ "$kleft" -gt 0 ]; then # what a child left behind is doing, and the daemon's threads
	for p in $(cat "$t/w/cgroup.procs"); do
		[ "$(awk '$1 == "PPid:" { print $2 }' "/proc/$p/status" 2>/dev/null)" = "$DAEMON_PID" ] || continue
		log "child $p: $(grep -E '^(State|SigPnd|ShdPnd|SigBlk|SigCgt)' "/proc/$p/status" | tr '\n\t' '  ') wchan $(cat "/proc/$p/wchan") stack $(tr '\n' ' ' <"/proc/$p/stack" 2>/dev/null)"
	done
	for d in /proc/$DAEMON_PID/task/*; do
		w=$(cat "$d/wchan" 2>/dev/null)
		case "$w" in do_sys_poll|futex_wait_queue|0|ep_poll|fuse_dev_do_read*|do_epoll_wait) ;;
		*) log "daemon thread ${d##*/} ($(cat "$d/comm")): wchan $w stack $(tr '\n' ' ' <"$d/stack" 2>/dev/null)" ;;
		esac
	done
fi
frozen "$t/w" || log "note: $t/w did not report frozen 1: $(tr '\n' ' ' <"$t/w/cgroup.events")"
odt asuser 1000 1000 sh -c "echo 0 >$t/w/cgroup.freeze" || fail "uid 1000 cannot thaw $t/w"
for p in $apids; do wait "$p"; done
log "children of the daemon in t/w: at most $maxk, the last seen $last ms after the daemon continued, $kleft at 8 s"
log "uid 1001's mkdir + setxattr + getxattr during the freeze: $u1 ms"
eagain=0; other=''
i=0
while [ $i -lt 6 ]; do
	if grep -q 'Resource temporarily unavailable' /tmp/att.$i; then
		eagain=$((eagain + 1))
	else
		other="$other [$i: $(cat /tmp/att.$i)]"
	fi
	i=$((i + 1))
done
log "attackers: $eagain of 6 EAGAIN$other"
alive "$DAEMON_PID" || fail "the daemon died: $(tail -n 5 /tmp/oomdelayfs.log)"
[ "$maxk" -ge 1 ] || fail "no child of the daemon was ever seen in the frozen t/w: the attack did not happen"
[ "$maxk" -le 2 ] || fail "$maxk children of one uid's charged calls at once (bound 2)"
[ "$kleft" -eq 0 ] || fail "$kleft children still frozen in t/w 8 s after the daemon continued (workers held)"
[ "$last" -le 5000 ] || fail "a frozen child lived $last ms (time-out 2000)"
[ "$eagain" -eq 6 ] || fail "not every attacker call ended in EAGAIN:$other"
[ -n "$u1" ] || fail "the legitimate calls never ran"
[ "$u1" -lt 1500 ] || fail "uid 1001's calls took $u1 ms during the freeze"
# the attacker's own call works once its cgroup runs
sh -c "echo \$\$ >$t/w/cgroup.procs && exec odt asuser 1000 1000 odt xattr set $st/w user.after v" ||
	fail "uid 1000 cannot label its own cgroup after the thaw"
[ "$(odt xattr get "$t/w" user.after)" = v ] || fail "the real tree lacks user.after"
x=$(mkcg x); sx=/shadow${x#$CGROOT}
setknob "$sx" memory.max $((32 * MiB))
setknob "$sx" memory.oom_delay_millisecs 600
kl=$(killed_on_time "$x" "$sx")
stop_daemon
pass "children in the frozen cgroup: at most $maxk, none after $last ms (time-out 2000);" \
	"attackers $eagain/6 EAGAIN; uid 1001's mkdir+label during the freeze $u1 ms;" \
	"uid 1000's label after the thaw works; kill +$kl ms"
