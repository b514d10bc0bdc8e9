# f-load (issue 5, deliverable 7): 64 concurrent clients on the shadow tree for 60 s
# (OOMD_LOAD_SECS) with loadgen: reads of every file of a set of cgroups, knob writes
# (memory.oom_delay_millisecs, memory.oom_control, memory.high, memory.max) each read back,
# mkdir/rmdir churn (with the inheritance of T and D checked), v1 listeners registering and
# leaving (cgroup.event_control), while 4 hogs in cgroups with L = 32 MiB and T = 100-300 ms are
# held, then killed (never before the deadline) or resolved (memory.max raised; the hog exits).
# Requires 0 unexpected errors, 0 lost writes, 0 leaked daemon descriptors (counted before the
# cgroups are created and after they are removed; a /dev/fuse descriptor per FUSE worker thread
# added by the load is libfuse's clone_fd, not a leak), daemon RSS at the end within +10 MiB of its
# value after the warm-up (the first half: FUSE workers are added on demand), holds started and
# killed, no "broken promise" in the daemon's log, and the daemon still alive and serving.
# timeout: 240
. /oomd/lib.sh
SECS=${OOMD_LOAD_SECS:-60}
start_daemon /shadow
base=$(mkcg load); sbase=/shadow${base#$CGROOT}
setknob "$sbase" cgroup.subtree_control +memory
log "loadgen: 64 clients, 4 hogs, ${SECS} s"
out=$(loadgen --shadow "$sbase" --real "$base" --clients 64 --hogs 4 --duration "$SECS" \
	--daemon-pid "$DAEMON_PID" 2>/tmp/loadgen.err) || fail "loadgen could not run: $(tail -n 3 /tmp/loadgen.err | tr '\n' ' ')"
log "loadgen: $out"
if [ -s /tmp/loadgen.err ]; then
	echo "--- loadgen errors (first 40):"
	head -n 120 /tmp/loadgen.err
fi
alive "$DAEMON_PID" || fail "the daemon died under load"
_mounted /shadow || fail "the shadow tree is no longer mounted"
cat "$sbase/memory.oom_control" >/dev/null || fail "the shadow tree does not answer after the load"
v() { echo "$out" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
errors=$(v errors) lost=$(v lost) fdb=$(v fd_before) fda=$(v fd_after) fdm=$(v fd_max)
fub=$(v fuse_fds_before) fua=$(v fuse_fds_after) thb=$(v threads_before) tha=$(v threads_after)
rw=$(v rss_warm_kb) re=$(v rss_end_kb) rs=$(v rss_start_kb) rm=$(v rss_max_kb)
holds=$(v holds) killed=$(v killed) rr=$(v resolved_raise) rx=$(v resolved_exit)
figs="$(v secs) s, $(v ops) ops ($(v files_read) file reads, $(v writes) writes + $(v readbacks) read-backs,"
figs="$figs $(v mkdirs) mkdir/$(v rmdirs) rmdir, $(v listeners) listeners ($(v notified) notified));"
figs="$figs errors $errors, lost writes $lost; daemon fds $fdb before, $fda after (max $fdm; /dev/fuse $fub -> $fua, threads $thb -> $tha);"
figs="$figs RSS $((rs / 1024)) MiB at start, $(($(v rss_q1_kb) / 1024))/$(($(v rss_q2_kb) / 1024))/$(($(v rss_q3_kb) / 1024)) MiB at 1/4, 1/2, 3/4 (threads $(v threads_q1)/$(v threads_q2)/$(v threads_q3)), $((re / 1024)) MiB at the end (max $((rm / 1024))), $(($(v rss_after_kb) / 1024)) MiB after the clean-up;"
figs="$figs holds $holds: $killed killed, $rr resolved by raising L, $rx by the hog's exit,"
figs="$figs $(v notified_after_kill) known only by a notification after the kill"
broken=$(grep -c 'broken promise' /tmp/oomdelayfs.log)
figs="$figs; daemon log: $broken broken promises"
[ "$broken" = 0 ] || { grep 'broken promise' /tmp/oomdelayfs.log | head -n 5; fail "the daemon logged $broken broken promises: $figs"; }
if [ "$errors" != 0 ]; then
	echo "--- the daemon's first lines about the hogs' cgroups:"
	grep -E '/load/h[0-9]+[:,]' /tmp/oomdelayfs.log | head -n 40
	fail "$errors unexpected errors: $figs"
fi
[ "$lost" = 0 ] || fail "$lost lost writes: $figs"
# libfuse keeps idle FUSE workers (up to --max-threads), each with its own /dev/fuse (clone_fd)
[ $((fda - fua)) -le $((fdb - fub)) ] || fail "$((fda - fua - fdb + fub)) daemon descriptors leaked: $figs"
[ $((fua - fub)) -le $((tha - thb)) ] || fail "$((fua - fub - tha + thb)) /dev/fuse descriptors leaked (beyond the added workers): $figs"
[ $((re - rw)) -le 10240 ] || fail "daemon RSS grew $(((re - rw) / 1024)) MiB after the warm-up: $figs"
[ "$holds" -gt 0 ] && [ "$killed" -gt 0 ] || fail "no hold started or no kill: $figs"
stop_daemon
pass "$figs"
