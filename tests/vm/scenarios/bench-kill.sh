# bench-kill (benchmark, not a test; runs only when named): detection and kill figures of a hold
# over N = 100 trials in each kill mode (kernel: memory.max back to L; group: cgroup.kill). Each trial: a fresh cgroup (shadow mkdir) with L = 32 MiB and T = 200 ms set
# through the shadow tree; readlat trial forks a hog (odt hog 128) into it and, on CLOCK_BOOTTIME:
#   - polls the real memory.current every 200 us until it exceeds L (t_over),
#   - reads the daemon's deadline from trusted.oomdelayfs.state (onset = deadline - T),
#   - waits for the hog's death on a pidfd (t_dead).
# detection = onset - t_over (ms; the daemon may see the crossing before the poller: negative);
# kill lateness = t_dead - deadline (ms). Prints one BENCH line per trial and, per mode,
# min/median/p95/p99/max (issue 13's goal: kill lateness p99 <= 10 ms).
# timeout: 1200
. /oomd/lib.sh
N=${OOMD_BENCH_TRIALS:-100}
T=200
L=$((32 * MiB))
summary=''
for mode in kernel group; do
	start_daemon /shadow --kill-mode "$mode"
	base=$(mkcg "k-$mode"); sbase=/shadow${base#$CGROOT}
	setknob "$sbase" cgroup.subtree_control +memory
	: >/tmp/bench.trials
	bad=0
	i=1
	while [ "$i" -le "$N" ]; do
		cg=$base/t$i; s=$sbase/t$i
		mkdir "$s" || fail "shadow mkdir $s"
		setknob "$s" memory.max "$L"
		setknob "$s" memory.oom_delay_millisecs "$T"
		if out=$(readlat trial "$cg" "$L" "$T" --timeout 30000 -- odt hog 128 --cgroup "$cg"); then
			echo "BENCH $OOMD_KERNEL kill trial $mode $i $out"
			echo "$out" >>/tmp/bench.trials
		else
			echo "bench-kill: $mode trial $i failed"
			bad=$((bad + 1))
		fi
		wait_for 5000 unpopulated "$cg" || fail "$mode trial $i: the cgroup is still populated"
		rmdir "$s" || fail "shadow rmdir $s"
		i=$((i + 1))
	done
	stop_daemon
	det=$(sed -n 's/.*detect_ms=\([-0-9.]*\).*/\1/p' /tmp/bench.trials | readlat stats "detection_ms_$mode") ||
		fail "no $mode trial succeeded"
	late=$(sed -n 's/.*late_ms=\([-0-9.]*\).*/\1/p' /tmp/bench.trials | readlat stats "kill_lateness_ms_$mode")
	echo "BENCH $OOMD_KERNEL kill $det"
	echo "BENCH $OOMD_KERNEL kill $late"
	[ "$bad" -eq 0 ] || fail "$bad of $N $mode trials failed; $det; $late"
	summary="$summary; $mode: $det; $late"
done
pass "T=${T} ms, L=32 MiB${summary}"
