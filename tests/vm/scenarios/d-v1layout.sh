# d-v1layout: `oomdelayfs --layout v1` serves the cgroup-v1 memory
# layout: only v1 names, v1 formats (unlimited 9223372036854771712, page-aligned), v1 errno,
# limit_in_bytes <-> the user's L (real memory.max / memory.high follow), tasks/cgroup.procs,
# memory.stat with v1 keys, use_hierarchy, oom_control/oom_delay_millisecs/event_control.
# The memory.peak a max_usage reset keeps open (a reset is per open file since 6.12, where
# memory.peak is writable) is closed when the cgroup is removed.
# Both kernels (6.12 has no native v1 memory controller; d-v1diff compares with it on 6.1).
# timeout: 60
. /oomd/lib.sh
UNL=9223372036854771712
start_daemon /shadow --layout v1
cg=$(mkcg v); s=/shadow${cg#$CGROOT}
[ -d "$s" ] || fail "no $s in the v1 view"
want="cgroup.event_control cgroup.procs memory.failcnt memory.force_empty memory.limit_in_bytes memory.max_usage_in_bytes"
want="$want memory.oom_control memory.oom_delay_millisecs"
# memory.pressure_level (issue 22) where the kernel has PSI
[ -e "$cg/memory.pressure" ] && want="$want memory.pressure_level"
want="$want memory.soft_limit_in_bytes memory.stat"
want="$want memory.usage_in_bytes memory.use_hierarchy tasks"
have=$(ls "$s" | grep -v '^memory\.memsw\.' | tr '\n' ' ' | sed 's/ $//')
[ "$have" = "$want" ] || fail "v1 listing: [$have], want [$want]"
memsw=$(ls "$s" | grep -c '^memory\.memsw\.')
[ -e "$s/memory.max" ] && fail "v2 file memory.max visible in the v1 view"
[ -e "$s/memory.current" ] && fail "v2 file memory.current visible in the v1 view"
rootls=$(ls /shadow | grep -c '^memory\.\|^tasks$\|^cgroup\.')
[ "$(cat "$s/memory.limit_in_bytes")" = "$UNL" ] || fail "limit reads $(cat "$s/memory.limit_in_bytes"), not $UNL"
[ "$(cat /shadow/memory.limit_in_bytes)" = "$UNL" ] || fail "root limit not $UNL"
echo 32M >"$s/memory.limit_in_bytes" || fail "echo 32M > memory.limit_in_bytes"
[ "$(cat "$s/memory.limit_in_bytes")" = 33554432 ] || fail "limit reads $(cat "$s/memory.limit_in_bytes") after 32M"
[ "$(cat "$cg/memory.max")" = 33554432 ] || fail "real memory.max $(cat "$cg/memory.max") after 32M (unmanaged: L)"
echo 10000 >"$s/memory.limit_in_bytes" || fail "echo 10000"
[ "$(cat "$s/memory.limit_in_bytes")" = 8192 ] || fail "10000 not rounded down to 8192: $(cat "$s/memory.limit_in_bytes")"
e=$(odt write "$s/memory.limit_in_bytes" max 2>&1) && fail "writing max succeeded ($e)"
echo "$e" | grep -q "Invalid argument" || fail "writing max: $e, not EINVAL"
e=$(odt write /shadow/memory.limit_in_bytes 1G 2>&1) && fail "root limit write succeeded"
echo "$e" | grep -q "Invalid argument" || fail "root limit write: $e, not EINVAL"
echo -1 >"$s/memory.limit_in_bytes" || fail "echo -1"
[ "$(cat "$s/memory.limit_in_bytes")" = "$UNL" ] || fail "-1 reads $(cat "$s/memory.limit_in_bytes")"
[ "$(cat "$cg/memory.max")" = max ] || fail "real memory.max $(cat "$cg/memory.max") after -1"
[ "$(cat "$s/memory.use_hierarchy")" = 1 ] || fail "use_hierarchy not 1"
echo 1 >"$s/memory.use_hierarchy" || fail "use_hierarchy=1 refused"
e=$(odt write "$s/memory.use_hierarchy" 0 2>&1) && fail "use_hierarchy=0 accepted"
echo "$e" | grep -q "Invalid argument" || fail "use_hierarchy=0: $e"
[ "$(cat "$s/memory.soft_limit_in_bytes")" = "$UNL" ] || fail "soft limit (memory.low 0) reads $(cat "$s/memory.soft_limit_in_bytes"), not v1's default $UNL"
echo 4M >"$s/memory.soft_limit_in_bytes" || fail "soft limit write"
[ "$(cat "$cg/memory.low")" = 4194304 ] || fail "memory.low $(cat "$cg/memory.low") after soft limit 4M"
sleep 100 &
sp=$!
echo $sp >"$s/tasks" || fail "echo pid > tasks (single-threaded process)"
grep -qx "$sp" "$s/tasks" || fail "pid $sp not in tasks: $(cat "$s/tasks")"
grep -qx "$sp" "$s/cgroup.procs" || fail "pid $sp not in cgroup.procs"
grep -qx "$sp" "$cg/cgroup.procs" || fail "pid $sp not in the real cgroup.procs"
odt hog 4 --cgroup "$cg" --exit || fail "hog"
u=$(cat "$s/memory.usage_in_bytes"); mu=$(cat "$s/memory.max_usage_in_bytes")
[ $((u % 4096)) = 0 ] || fail "usage $u not page-aligned"
[ "$mu" -ge $((4 * MiB)) ] || fail "max_usage $mu < 4 MiB after a 4 MiB hog"
echo 0 >"$s/memory.max_usage_in_bytes" || fail "max_usage reset write"
mu2=$(cat "$s/memory.max_usage_in_bytes")
for k in cache rss shmem mapped_file pgfault pgmajfault inactive_anon active_anon inactive_file \
	active_file unevictable hierarchical_memory_limit total_cache total_rss total_pgfault; do
	grep -q "^$k [0-9]*\$" "$s/memory.stat" || fail "memory.stat has no '$k': $(tr '\n' ' ' <"$s/memory.stat")"
done
grep -q '^file ' "$s/memory.stat" && fail "memory.stat shows v2 keys"
grep -q "^hierarchical_memory_limit $UNL\$" "$s/memory.stat" || fail "hierarchical_memory_limit: $(grep hier "$s/memory.stat")"
echo 64M >"$s/memory.limit_in_bytes"
grep -q "^hierarchical_memory_limit 67108864\$" "$s/memory.stat" || fail "hierarchical_memory_limit after 64M: $(grep hier "$s/memory.stat")"
echo 0 >"$s/memory.force_empty" || fail "force_empty write"
e=$(odt write /shadow/memory.force_empty 0 2>&1) && fail "root force_empty accepted"
e=$(odt write "$s/memory.current" 0 2>&1) && fail "v2 name memory.current writable in the v1 view ($e)"
fc=$(cat "$s/memory.failcnt")
echo 0 >"$s/memory.failcnt" || fail "failcnt reset"
[ "$(cat "$s/memory.failcnt")" = 0 ] || fail "failcnt $(cat "$s/memory.failcnt") after reset"
printf 'oom_kill_disable 0\nunder_oom 0\noom_kill 0\n' >/tmp/oc.want
cmp -s /tmp/oc.want "$s/memory.oom_control" || fail "oom_control: $(cat "$s/memory.oom_control")"
echo 1 >"$s/memory.oom_control" || fail "oom_control=1"
grep -q '^oom_kill_disable 1' "$s/memory.oom_control" || fail "oom_kill_disable not 1"
echo 0 >"$s/memory.oom_control"
echo 500 >"$s/memory.oom_delay_millisecs" || fail "oom_delay write"
[ "$(cat "$s/memory.oom_delay_millisecs")" = 500 ] || fail "oom_delay reads $(cat "$s/memory.oom_delay_millisecs")"
# a limit below the usage: v1 reclaims and answers EBUSY, nothing is killed
echo 64M >"$s/memory.limit_in_bytes"
start_hog "$cg" 16
wait_for 20000 sh -c "[ \$(odt progress $HOG_REPORT 2>/dev/null || echo 0) -ge 16384 ]" || fail "16 MiB hog did not finish"
e=$(odt write "$s/memory.limit_in_bytes" 8M 2>&1) && fail "limit below usage accepted ($e)"
echo "$e" | grep -q "busy" || fail "limit below usage: $e, not EBUSY"
[ "$(cat "$s/memory.limit_in_bytes")" = 67108864 ] || fail "limit changed to $(cat "$s/memory.limit_in_bytes") by a refused write"
alive "$HOG_PID" || fail "the hog was killed by a limit write that v1 refuses"
kill "$HOG_PID"; wait "$HOG_PID" 2>/dev/null
echo -1 >"$s/memory.limit_in_bytes"
kill $sp; wait $sp 2>/dev/null
# v2's no-internal-process rule: +memory for the child needs the parent empty (deviation, V1-LAYOUT.md)
mkdir "$s/c" || fail "mkdir in the v1 view"
[ -f "$s/c/memory.limit_in_bytes" ] || fail "new child has no memory.limit_in_bytes (parent subtree_control: $(cat "$cg/cgroup.subtree_control"))"
[ "$(cat "$s/c/memory.oom_delay_millisecs")" = 500 ] || fail "child did not inherit T"
echo 0 >"$s/c/memory.max_usage_in_bytes" || fail "max_usage reset in the child"
peakfds() { ls -l /proc/[0-9]*/fd 2>/dev/null | grep -c "$cg/c/memory.peak"; }
kept=$(peakfds)
pmode=$(stat -c %a "$cg/c/memory.peak") || fail "no memory.peak"
want=$(( (0$pmode & 0200) != 0 )) # writable (6.12+): the reset file is kept
[ "$kept" = "$want" ] || fail "$kept descriptors of the reset memory.peak kept (want $want: mode $pmode)"
rmdir "$s/c" || fail "rmdir"
wait_for 5000 sh -c "[ \$(ls -l /proc/[0-9]*/fd 2>/dev/null | grep -c '$cg/c/memory.peak') = 0 ]" ||
	fail "$(peakfds) descriptors of memory.peak still open 5 s after the rmdir"
stop_daemon
pass "v1 names only (memsw files: $memsw, root entries: $rootls), formats and errno as v1;" \
	"failcnt was $fc; max_usage $mu -> $mu2 after reset; reset memory.peak kept open: $kept, after rmdir: 0"
