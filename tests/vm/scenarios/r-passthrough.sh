# r-passthrough: a recursive read of the real tree and of the shadow tree agree (names, modes,
# owners, contents apart from counters that move), and ordinary knobs written through the
# shadow take effect in the real tree.
# timeout: 90
. /oomd/lib.sh
start_daemon /shadow
cg=$(mkcg pt); s=/shadow${cg#$CGROOT}
setknob "$cg" cgroup.subtree_control +memory
mkdir "$cg/a" "$cg/a/b" 2>/dev/null || mkdir -p "$cg/a/b"
# names and modes (synthetic files are the only extra names)
(cd "$CGROOT" && find . | sort) >/tmp/real.ls
(cd /shadow && find . | sort | grep -v -e 'memory.oom_delay_millisecs$' -e 'memory.oom_control$' -e 'cgroup.event_control$' -e 'memory.usage_in_bytes$' -e 'memory.pressure_level$') >/tmp/shadow.ls
cmp -s /tmp/real.ls /tmp/shadow.ls || { diff /tmp/real.ls /tmp/shadow.ls | head -20; fail "the shadow tree lists other names than the real tree"; }
files=$(wc -l </tmp/real.ls)
moving='memory.current|memory.stat|memory.events|memory.peak|pressure|cpu.stat|io.stat|memory.numa_stat|memory.swap|cgroup.stat|memory.zswap|pids.peak|misc.current|rdma.current|hugetlb'
diffs=0 compared=0
for f in $(cd "$cg" && find . -type f); do
	case $f in */memory.max|*/memory.high) continue ;; esac
	echo "$f" | grep -Eq "$moving" && continue
	[ -r "$cg/$f" ] || continue
	[ "$(stat -c '%a %u %g' "$cg/$f")" = "$(stat -c '%a %u %g' "$s/$f")" ] || { echo "mode/owner differ: $f"; diffs=$((diffs + 1)); }
	r=$(cat "$cg/$f" 2>&1); v=$(cat "$s/$f" 2>&1)
	[ "$r" = "$v" ] || { echo "content differs: $f: real '$r' shadow '$v'"; diffs=$((diffs + 1)); }
	compared=$((compared + 1))
done
[ "$diffs" = 0 ] || fail "$diffs of $compared files differ between the real and the shadow tree"
# ordinary knobs through the shadow
setknob "$s/a" memory.low 4194304
[ "$(cat "$cg/a/memory.low")" = 4194304 ] || fail "memory.low written through the shadow reads $(cat "$cg/a/memory.low") in the real tree"
setknob "$s/a" cgroup.max.descendants 5
[ "$(cat "$cg/a/cgroup.max.descendants")" = 5 ] || fail "cgroup.max.descendants not passed through"
mkdir "$s/a/new" && [ -d "$cg/a/new" ] || fail "shadow mkdir did not create a real cgroup"
rmdir "$s/a/new" && [ ! -d "$cg/a/new" ] || fail "shadow rmdir did not remove the real cgroup"
mkdir "$cg/a/direct" && [ -d "$s/a/direct" ] || fail "a real mkdir is not seen in the shadow"
# SEMANTICS: a cgroup removed in the real tree is gone from the shadow within 1 s (the entry
# time-out); the watcher's invalidation is asynchronous, so the first stat may still see it
rmdir "$cg/a/direct" || fail "real rmdir of $cg/a/direct"
wait_for 1100 test ! -e "$s/a/direct" || fail "a real rmdir leaves a stale shadow entry for more than 1 s"
gone_ms=$WAITED_MS
err=$(odt write "$s/a/cgroup.subtree_control" "+nosuch" 2>&1) && fail "bad subtree_control write succeeded"
case $err in *"Invalid argument"*) ;; *) fail "bad subtree_control write: '$err', not the kernel's EINVAL" ;; esac
stop_daemon
pass "$files names agree; $compared files equal in mode, owner and content; knobs, mkdir/rmdir and the kernel's errno pass through; a real rmdir gone from the shadow after $gone_ms ms"
