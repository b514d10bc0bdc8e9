# r-inherit (rule 7, and the subtree write of the patch): writing memory.oom_delay_millisecs
# sets the cgroup and every descendant; a new cgroup starts with its parent's T and D, whether
# made through the shadow tree or directly in the real tree by another program.
# timeout: 60
. /oomd/lib.sh
start_daemon /shadow
cg=$(mkcg p); s=/shadow${cg#$CGROOT}
setknob "$s" cgroup.subtree_control +memory
mkdir "$s/old" || fail "shadow mkdir old"
setknob "$s/old" cgroup.subtree_control +memory
mkdir "$s/old/deep" || fail "shadow mkdir old/deep"
setknob "$s" memory.oom_delay_millisecs 700
for d in "$s" "$s/old" "$s/old/deep"; do
	[ "$(cat "$d/memory.oom_delay_millisecs")" = 700 ] || fail "${d#/shadow} reads T=$(cat "$d/memory.oom_delay_millisecs") after the subtree write"
done
setknob "$s" memory.oom_control 1
grep -q '^oom_kill_disable 0' "$s/old/memory.oom_control" || fail "D on the parent changed an existing child (D is per cgroup)"
mkdir "$s/viashadow" || fail "shadow mkdir viashadow"
t=$(cat "$s/viashadow/memory.oom_delay_millisecs"); grep -q '^oom_kill_disable 1' "$s/viashadow/memory.oom_control" || fail "shadow-made child did not inherit D=1"
[ "$t" = 700 ] || fail "shadow-made child reads T=$t, not 700"
t0=$(now_ms)
mkdir "$cg/viareal" || fail "real mkdir viareal"
inherited() { [ "$(cat "$s/viareal/memory.oom_delay_millisecs" 2>/dev/null)" = 700 ] && grep -q '^oom_kill_disable 1' "$s/viareal/memory.oom_control" 2>/dev/null; }
wait_for 3000 inherited || fail "real-made child reads T=$(cat "$s/viareal/memory.oom_delay_millisecs" 2>&1), $(head -1 "$s/viareal/memory.oom_control" 2>&1)"
tr=$WAITED_MS
# a cgroup made with its parent directly in the real tree takes a shadow write at once, even if
# the watcher has not seen the parent yet (the daemon adds the ancestors first); this races with
# the watcher, so it catches a regression only when the shell wins
mkdir "$cg/r1" && echo +memory > "$cg/r1/cgroup.subtree_control" && mkdir "$cg/r1/r2" || fail "real mkdir r1/r2"
echo 250 > "$s/r1/r2/memory.oom_delay_millisecs" || fail "write to r1/r2 made directly in the real tree refused"
[ "$(cat "$s/r1/r2/memory.oom_delay_millisecs")" = 250 ] || fail "r1/r2 reads T=$(cat "$s/r1/r2/memory.oom_delay_millisecs" 2>&1), not 250"
[ "$(cat "$s/r1/memory.oom_delay_millisecs")" = 700 ] || fail "r1 reads T=$(cat "$s/r1/memory.oom_delay_millisecs" 2>&1) after its child's write, not its inherited 700"
# a child of the root gets the root's T too (the root's write sets the whole tree)
setknob /shadow memory.oom_delay_millisecs 0
[ "$(cat "$s/old/deep/memory.oom_delay_millisecs")" = 0 ] || fail "root write did not reach old/deep"
stop_daemon
pass "subtree write reached 3 levels; shadow mkdir inherited T=700 D=1 at once; real mkdir inherited in ${tr} ms; a real mkdir -p took a shadow write at once; root write reset the tree"
