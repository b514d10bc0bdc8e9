# r-handler (rule 5): a handler kills the hog, or moves it out, during the delay: the hold ends
# at once (T = 30 s, so the deadline cannot be what ends it) with no kernel kill (the real
# oom_kill counter is unchanged). A moved task leaves its charges behind (cgroup v2): usage
# stays over L, and only "no task left" (cgroup.events populated 0) ends that hold.
# timeout: 90
. /oomd/lib.sh
start_daemon /shadow
L=$((32 * MiB))
uoom() { grep -q '^under_oom 1' "$1/memory.oom_control"; }
out=$(mkcg out)
figs=''
for how in kill move; do
	cg=$(mkcg "$how"); s=/shadow${cg#$CGROOT}
	setknob "$s" memory.max "$L"
	setknob "$s" memory.oom_delay_millisecs 30000 # the hold ends at the action, not the deadline
	k0=$(evkey "$cg" oom_kill)
	start_hog "$cg" 256
	wait_for 30000 uoom "$s" || fail "$how: no hold within 30 s"
	t0=$(now_ms)
	if [ "$how" = kill ]; then
		kill -KILL "$HOG_PID"
	else
		echo "$HOG_PID" >"/shadow${out#$CGROOT}/cgroup.procs" || fail "move through the shadow cgroup.procs failed"
	fi
	wait_for 10000 sh -c "! grep -q '^under_oom 1' $s/memory.oom_control" || fail "$how: under_oom still 1 after 10 s"
	te=$(($(now_ms) - t0))
	[ "$(evkey "$cg" oom_kill)" = "$k0" ] || fail "$how: the kernel OOM-killed ($(evkey "$cg" oom_kill))"
	if [ "$how" = move ]; then
		alive "$HOG_PID" || fail "moved hog died"
		grep -qx "$HOG_PID" "$out/cgroup.procs" || fail "hog not in the target cgroup"
		kill -KILL "$HOG_PID"
	fi
	wait "$HOG_PID" 2>/dev/null
	figs="$figs $how: hold ended ${te} ms later;"
done
stop_daemon
pass "$figs no kernel kill"
