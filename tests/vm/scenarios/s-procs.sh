# s-procs (issue 10, deliverable 4): migration through the shadow is what the kernel allows, with
# the kernel's errno, in both layouts. Every action runs twice, on the real cgroup.procs and
# through the shadow, and the answers must be equal (and the expected ones):
#  (a) uid 1000 cannot move a root-owned process into its delegated cgroup (EACCES: no write
#      access to the common ancestor's cgroup.procs) nor open a root-owned cgroup's cgroup.procs
#      (EACCES); the owner of the delegated subtree moves its own process between its cgroups.
#  (b) CVE-2021-4197 shape: a descriptor opened by uid 1000, written by the same process after it
#      became root again, cannot move the root-owned process (EACCES), and still moves the
#      user's own one. In the v1 layout (tasks and cgroup.procs) the same, though those files
#      are synthetic there (opened as the opener at FUSE open, not as the writer at write time).
#  (threads, v2 layout; the v1 view has no threaded cgroups) the owner moves a thread of its two-threaded process inside its threaded
#      subtree through cgroup.threads, and gets EOPNOTSUPP moving it to another domain.
# timeout: 120
. /oomd/lib.sh
top=$(mkcg procs)
root=$top/rootcg deleg=$top/deleg
mkdir "$root" "$deleg" || fail "mkdir"
# memory everywhere: the v1 view shows tasks and cgroup.procs in memory cgroups only
setknob "$top" cgroup.subtree_control +memory
setknob "$deleg" cgroup.subtree_control +memory
mkdir "$deleg/a" "$deleg/b" "$deleg/t" "$deleg/t/x" || fail "mkdir"
echo threaded >"$deleg/t/x/cgroup.type" || fail "cannot make t/x threaded"
# delegated the cgroup-v2 way: the directory and its cgroup.procs/threads/subtree_control
chown 1000:1000 "$deleg" "$deleg/cgroup.procs" "$deleg/cgroup.threads" "$deleg/cgroup.subtree_control"
chown -R 1000:1000 "$deleg/a" "$deleg/b" "$deleg/t"
sleep 1000 &
rootpid=$!
odt asuser 1000 1000 sleep 1000 &
userpid=$!
rm -f /tmp/s-procs.tid
odt asuser 1000 1000 nsx threads /tmp/s-procs.tid &
thrpid=$!
wait_for 3000 test -s /tmp/s-procs.tid || fail "no second thread"
tid=$(cat /tmp/s-procs.tid)
echo "$rootpid" >"$root/cgroup.procs" || fail "cannot place the root process"
echo "$userpid" >"$deleg/a/cgroup.procs" || fail "cannot place the user's process"
echo "$thrpid" >"$deleg/t/cgroup.procs" || fail "cannot place the two-threaded process"
cgof() { sed -n 's/^0:://p' "/proc/$1/cgroup"; }
rel=${top#$CGROOT}

# try TREE FILE: the four actions against TREE (the real root or a shadow mount); one line each
try() {
	t=$1$rel f=$2
	a1=$(odt asuser 1000 1000 nsx write "$t/deleg/b/$f" "$rootpid")
	a2=$(odt asuser 1000 1000 nsx write "$t/rootcg/$f" "$userpid")
	a3=$(odt asuser 1000 1000 nsx write "$t/deleg/b/$f" "$userpid")
	w3=$(cgof "$userpid")
	echo "$userpid" >"$deleg/a/cgroup.procs"
	b1=$(nsx openas 1000 1000 "$t/deleg/b/$f" "$rootpid")
	b2=$(nsx openas 1000 1000 "$t/deleg/b/$f" "$userpid")
	w4=$(cgof "$userpid")
	echo "$userpid" >"$deleg/a/cgroup.procs"
	[ "$(cgof "$rootpid")" = "$rel/rootcg" ] || fail "$1 $f: the root-owned process moved to $(cgof "$rootpid")"
	echo "root->deleg:$a1 user->rootcg:$a2 user-a->b:$a3@${w3#$rel/} fd-as-root:$b1 fd-own:$b2@${w4#$rel/}"
}
want="root->deleg:EACCES user->rootcg:EACCES user-a->b:ok@deleg/b fd-as-root:EACCES fd-own:ok@deleg/b"
# thr TREE: uid 1000 moves its second thread within its threaded subtree, then to another domain
thr() {
	t=$1$rel
	t1=$(odt asuser 1000 1000 nsx write "$t/deleg/t/x/cgroup.threads" "$tid")
	w5=$(sed -n 's/^0:://p' "/proc/$thrpid/task/$tid/cgroup")
	t2=$(odt asuser 1000 1000 nsx write "$t/deleg/a/cgroup.threads" "$tid")
	w6=$(sed -n 's/^0:://p' "/proc/$thrpid/task/$tid/cgroup")
	echo "$tid" >"$deleg/t/cgroup.threads"
	echo "thread-in-subtree:$t1@${w5#$rel/} thread-other-domain:$t2@${w6#$rel/}"
}
want_t="thread-in-subtree:ok@deleg/t/x thread-other-domain:EOPNOTSUPP@deleg/t/x"
real=$(try "$CGROOT" cgroup.procs)
log "real:     $real"
[ "$real" = "$want" ] || fail "the real tree answers '$real', the scenario expects '$want'"
real_t=$(thr "$CGROOT")
log "real:     $real_t"
[ "$real_t" = "$want_t" ] || fail "the real tree answers '$real_t', the scenario expects '$want_t'"

start_daemon /shadow
v2=$(try /shadow cgroup.procs)
log "shadow:   $v2"
[ "$v2" = "$real" ] || fail "shadow (v2 layout) answers '$v2', the real file '$real'"
v2_t=$(thr /shadow)
log "shadow:   $v2_t"
[ "$v2_t" = "$real_t" ] || fail "shadow cgroup.threads answers '$v2_t', the real file '$real_t'"
stop_daemon

start_daemon /shadow --layout v1
v1p=$(try /shadow cgroup.procs)
log "v1 procs: $v1p"
[ "$v1p" = "$real" ] || fail "shadow (v1 layout) cgroup.procs answers '$v1p', the real file '$real'"
v1t=$(try /shadow tasks)
log "v1 tasks: $v1t"
[ "$v1t" = "$real" ] || fail "shadow (v1 layout) tasks answers '$v1t', the real file '$real'"
stop_daemon
kill "$rootpid" "$userpid" "$thrpid"
pass "real, v2 shadow, v1 cgroup.procs and v1 tasks all answer: $real; real and shadow cgroup.threads: $real_t"
