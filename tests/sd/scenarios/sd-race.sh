# sd-race (issue 19, failure 5; deliverable 4): every rule holds under systemd as in the lab,
# whatever the daemon is doing at start. The sequence of the issue, repeated: a fresh start of
# the unit (systemctl stop, then start: a new server, not a takeover; Type=notify, so start
# returns once it is ready), 3 s later a cgroup made through the shadow (in a Delegate=yes
# unit's subtree) and given L = 32M and T = 1,500 ms there, the real knobs checked as the writes
# return (memory.max L + ceiling, memory.high L), a hog started. Each round must hold the hog to
# the deadline (the real oom_kill unchanged before it) and see the kernel kill it after; the
# journal must have one hold-started and one hold-ended record of it, OOMD_END=kill-kernel,
# OOMD_DEADLINE_IN_MS = T and OOMD_HELD_MS >= T (counted from the onset the deadline counts
# from). Every fourth round is the issue's disable hold instead (oom_control 1): held 2 s with
# under_oom 1 throughout, one record, ended by a raise of L.
# How many rounds: the issue saw the early kill once in four runs. 16 rounds of the sequence
# (12 with a delay, 4 disable holds, both ended early by the same one reading under L before
# the fix) miss a failure that shows once in four with probability 0.75^16 = 1 %. The suite
# runs this on two kernels (6.12 and 7), 8 rounds on each (6 delay, 2 disable holds): the same
# 16 per suite run, in half the time (a round is about 25 s under TCG: 16 took 395 s of a
# CI-like run's 26 min on each kernel).
# Figures: rounds, start-to-ready times, kill lateness, OOMD_HELD_MS.
# timeout: 600
. /payload/lib.sh
L=$((32 * MiB)) T=1500 CEIL=$((64 * MiB)) ROUNDS=8
sd_install
top=$(sd_cgtree race)
rec() { sd_records "$1" CGROUP="$2"; }
# dl_of CG: sets DL to the hold's deadline (lib.sh: the persisted state, or the journal's line)
dl_of() { DL=$(hold_deadline_ns "$1"); [ -n "$DL" ]; }
nrec() { rec "$1" "$2" | wc -l; }
lates=''; helds=''; readies=''; dis=0
i=0
while [ $i -lt $ROUNDS ]; do
	systemctl stop oomdelayfs || fail "round $i: systemctl stop failed"
	fuse_mounted "$SHADOW" && fail "round $i: $SHADOW still mounted after the stop"
	t0=$(now_ms)
	systemctl start oomdelayfs || fail "round $i: systemctl start failed: $(systemctl status --no-pager oomdelayfs | tail -n 5)"
	readies="$readies $(($(now_ms) - t0))"
	fuse_mounted "$SHADOW" || fail "round $i: the unit is started but $SHADOW is not served"
	sleep 3
	cg=$top/r$i
	s=$(shadow_of "$cg")
	mkdir "$s" || fail "round $i: mkdir $s"
	disable=0
	[ $((i % 4)) = 3 ] && disable=1
	echo "$L" >"$s/memory.max" || fail "round $i: cannot write memory.max through the shadow"
	if [ "$disable" = 1 ]; then
		echo 1 >"$s/memory.oom_control" || fail "round $i: cannot write memory.oom_control"
	else
		echo "$T" >"$s/memory.oom_delay_millisecs" || fail "round $i: cannot write the delay"
	fi
	rmax=$(cat "$cg/memory.max") rhigh=$(cat "$cg/memory.high")
	[ "$rmax" = $((L + CEIL)) ] || fail "round $i: real memory.max $rmax as the writes returned, not L + ceiling"
	[ "$rhigh" = "$L" ] || fail "round $i: real memory.high $rhigh as the writes returned, not L"
	k0=$(evkey "$cg" oom_kill)
	if [ "$disable" = 1 ]; then
		start_hog "$cg" 256
		wait_for 30000 under_oom "$s" || fail "round $i (disable): no hold within 30 s (usage $(current "$cg"))"
		n=0
		while [ $n -lt 20 ]; do
			under_oom "$s" || fail "round $i (disable): under_oom 0 after $((n * 100)) ms of the hold"
			sleep 0.1
			n=$((n + 1))
		done
		alive "$HOG_PID" || fail "round $i (disable): the hog died under oom_kill_disable 1"
		[ "$(evkey "$cg" oom_kill)" = "$k0" ] || fail "round $i (disable): the kernel's oom_kill moved"
		echo $((512 * MiB)) >"$s/memory.max" || fail "round $i (disable): cannot raise L"
		end=$(sd_wait_record 5000 "$MSG_HOLD_END" CGROUP="$cg") || fail "round $i (disable): no hold-ended record 5 s after the raise"
		[ "$(sd_field "$end" OOMD_END)" = raise ] || fail "round $i (disable): OOMD_END=$(sd_field "$end" OOMD_END), not raise"
		kill "$HOG_PID"
		wait "$HOG_PID" 2>/dev/null
		dis=$((dis + 1))
	else
		kill_watch "$cg"
		start_hog "$cg" 256
		wait_for 30000 dl_of "$cg" || fail "round $i: no hold within 30 s (usage $(current "$cg"), events $(tr '\n' ' ' <"$cg/memory.events"))"
		dlns=$DL
		held_until $((dlns / 1000000)) "$cg" "$k0" "$HOG_PID"
		wait_for 10000 dead "$HOG_PID" || fail "round $i: the hog is alive 10 s after the deadline"
		kl=$(kill_late "$cg" "$dlns")
		end=$(sd_wait_record 5000 "$MSG_HOLD_END" CGROUP="$cg") || fail "round $i: no hold-ended record"
		[ "$(sd_field "$end" OOMD_END)" = kill-kernel ] || fail "round $i: OOMD_END=$(sd_field "$end" OOMD_END), not kill-kernel: $end"
		held=$(sd_field "$end" OOMD_HELD_MS)
		awk -v h="$held" -v t="$T" 'BEGIN { exit !(h >= t) }' || fail "round $i: OOMD_HELD_MS=$held for T = $T ms (kill $kl ms after the deadline)"
		start=$(rec "$MSG_HOLD_START" "$cg" | head -n 1)
		[ "$(sd_field "$start" OOMD_DEADLINE_IN_MS)" = "$T" ] || fail "round $i: OOMD_DEADLINE_IN_MS=$(sd_field "$start" OOMD_DEADLINE_IN_MS), not T"
		lates="$lates $kl"
		helds="$helds $held"
		wait "$KW_PID" 2>/dev/null
	fi
	ns=$(nrec "$MSG_HOLD_START" "$cg") ne=$(nrec "$MSG_HOLD_END" "$cg")
	[ "$ns" = 1 ] && [ "$ne" = 1 ] || fail "round $i: $ns hold-started and $ne hold-ended records of one hold"
	[ -z "$(rec "$MSG_BROKEN" "$cg")" ] || fail "round $i: a broken promise: $(rec "$MSG_BROKEN" "$cg")"
	rmdir "$cg" || fail "round $i: rmdir $cg"
	i=$((i + 1))
done
systemctl stop oomdelayfs
dpkg --purge oomdelayfs >/dev/null 2>&1 || fail "dpkg --purge failed"
pass "$ROUNDS fresh starts (start to ready, ms:$readies); $((ROUNDS - dis)) delay holds held to the" \
	"deadline, killed after it (ms late:$lates), OOMD_HELD_MS >= T ($helds), one record pair" \
	"each; $dis disable holds held 2 s, one record pair each, ended by a raise; real knobs L + ceiling" \
	"and L as every write returned"
