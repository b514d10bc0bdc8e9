# f-scale (issue 13, deliverable 3): the daemon with 1,000, 5,000 and 10,000 managed cgroups.
# A benchmark: it runs only when named (tests/vm/bench.sh runs it in a VM with 3 GiB).
# only when named
# For each N: N sibling cgroups made in the real tree with a real memory.max of 16 MiB, the
# daemon started (they are known, not managed), then T = 5000 written once on their parent
# through the shadow tree, which makes all N managed (rule of inheritance: a subtree write).
# Figures per N: start until "serving" (every cgroup adopted), the subtree write (ms; the FUSE
# write returns once every real knob is written), the daemon's RSS and descriptors, its idle
# wake-ups (context switches of all its threads) over the 5 s right after the write (the loop
# still reads the inotify echo of the write's N memory.max writes) and over the next 5 s, with
# the threads that woke and the largest resident mappings logged; `ls` of the N-child directory
# through the shadow (ms); then SIGKILL and a restart: ms from exec to the last child's delay
# reading back 5000 through the shadow (served before the tree is adopted: that cgroup is
# adopted on its first use), to "serving" (all adopted) and the daemon's own walk (its "cgroups
# found in" line); RSS and descriptors after it, and RSS 3 s later (what was transient);
# SIGTERM (hand-back of N cgroups) in ms. Where RSS goes is logged after the write and after
# the restart: every mapping with 32 kB or more resident, each thread's stack, and the malloc
# blocks that the large anonymous mappings are made of.
# VM: OOMD_VM_APPEND='OOMD_SCALE_SIZES="1000 10000"' (the kernel passes it to init) for fewer sizes.
# Fails if a figure cannot be taken or the daemon loses a cgroup; the goals of issue 13 (linear,
# restart <= 2 s and RSS <= 16 MiB at 10,000, 0 idle wake-ups) are printed, not asserted:
# benchmarks print numbers.
# BENCH lines: BENCH <kernel> scale N=<n> <key>=<value> ...
# timeout: 2400
. /oomd/lib.sh
command -v pressure >/dev/null || skip "tests/vm/progs/pressure is not built"
SIZES=${OOMD_SCALE_SIZES:-1000 5000 10000}
L=$((16 * MiB))

# wakeups PID: context switches of all of PID's threads so far
wakeups() {
	cat /proc/"$1"/task/*/status 2>/dev/null |
		awk '/^(voluntary|nonvoluntary)_ctxt_switches/ { n += $2 } END { print n + 0 }'
}
# by_thread PID: "tid comm switches" for each of PID's threads (which thread wakes up)
by_thread() {
	for t in /proc/"$1"/task/*; do
		awk -v t="${t##*/}" -v c="$(cat "$t/comm" 2>/dev/null)" \
			'/^(voluntary|nonvoluntary)_ctxt_switches/ { n += $2 } END { print t, c, n + 0 }' "$t/status" 2>/dev/null
	done
}
# big_maps PID: the daemon's largest resident mappings (kB), for where RSS goes
big_maps() {
	awk '/^[0-9a-f]+-[0-9a-f]+ / { m = $6 ? $6 : "[anon]" } /^Rss:/ { r[m] += $2 }
		END { for (k in r) print r[k], k }' "/proc/$1/smaps" | sort -rn | head -n 5 | tr '\n' ' '
}
# maps_detail PID: each mapping with 32 kB or more resident, "rss/size kB perms name", largest
# first; anonymous ones with their address, and the inaccessible ones beside them (a thread
# stack is 8 MiB above a guard page; a malloc arena's heap starts 64 MiB-aligned, its
# reserve after it ---p; a block over the mmap threshold is a mapping of its own)
maps_detail() {
	awk '/^[0-9a-f]+-[0-9a-f]+ / { m = $6 ? $6 : "anon@" substr($1, 1, index($1, "-") - 1); p = $2 }
		/^Size:/ { z = $2 } /^Rss:/ { if ($2 >= 32 || p == "---p") print $2 "/" z, p, m }' \
		"/proc/$1/smaps" | sort -rn | tr '\n' ' '
}
# stacks PID: "name:kB" for each of PID's threads, the resident part of the mapping that holds
# its stack pointer (/proc/PID/task/TID/syscall: its last two fields are sp and pc)
stacks() {
	for t in /proc/"$1"/task/*; do
		sp=$(awk 'NF > 2 { print $(NF - 1) }' "$t/syscall" 2>/dev/null)
		[ -n "$sp" ] || continue
		sp=$((sp))
		r=$(while read -r range rest; do
			[ "$sp" -ge $((0x${range%-*})) ] && [ "$sp" -lt $((0x${range#*-})) ] && echo "$range" && break
		done <"/proc/$1/maps")
		[ -n "$r" ] || continue
		printf '%s:%s ' "$(cat "$t/comm")" "$(awk -v r="$r" '$1 == r { f = 1; next }
			f && /^Rss:/ { print $2; exit }' "/proc/$1/smaps")"
	done
}
# chunks PID: for each anonymous rw mapping over 256 kB that is not a stack, the sizes (kB) of
# the malloc blocks it is made of (a block over the mmap threshold is mapped on its own,
# page-aligned, its size in the second word of its header; neighbours merge into one mapping)
chunks() {
	awk '/^[0-9a-f]+-[0-9a-f]+ rw-p 00000000 00:00 0 *$/ { print $1 }' "/proc/$1/maps" |
		while read -r range; do
			lo=$((0x${range%-*})) hi=$((0x${range#*-}))
			[ $((hi - lo)) -gt $((256 * 1024)) ] && [ $((hi - lo)) -ne $((8192 * 1024)) ] || continue
			printf '@%x:' "$lo"
			a=$lo
			while [ "$a" -lt "$hi" ]; do
				z=$(dd if="/proc/$1/mem" bs=8 skip=$((a / 8 + 1)) count=1 2>/dev/null | od -A n -t u8 | tr -d ' ')
				z=$(( ${z:-0} & ~7 ))
				[ "$z" -gt 0 ] && [ $((z % 4096)) = 0 ] || { printf ' ?'; break; }
				printf ' %d' $((z / 1024))
				a=$((a + z))
			done
			printf '; '
		done
}
rss_kb() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
fds() { ls "/proc/$1/fd" | wc -l; }
ms_since() { awk -v a="$(pressure now)" -v b="$1" 'BEGIN { printf "%.0f", a - b }'; }
delay_is() { [ "$(cat "$1" 2>/dev/null)" = "$2" ]; }

summary=''
for N in $SIZES; do
	p=$(mkcg "s$N")
	sp=/shadow${p#$CGROOT}
	setknob "$p" cgroup.subtree_control +memory
	t0=$(now_ms)
	(cd "$p" && seq 1 "$N" | sed 's/^/c/' | xargs mkdir) || fail "mkdir of $N cgroups"
	for i in $(seq 1 "$N"); do
		echo "$L" >"$p/c$i/memory.max" || fail "real memory.max of c$i"
	done
	tmk=$(($(now_ms) - t0))

	t0=$(pressure now)
	SHADOW=/shadow
	mkdir -p "$SHADOW"
	n0=$(grep -c 'serving ' /tmp/oomdelayfs.log 2>/dev/null)
	_launch_daemon
	wait_for 600000 _served "${n0:-0}" || fail "N=$N: the daemon did not serve $SHADOW within 600 s"
	tstart=$(ms_since "$t0")
	t0=$(pressure now)
	echo 5000 >"$sp/memory.oom_delay_millisecs" || fail "N=$N: T on the parent"
	twrite=$(ms_since "$t0")
	read -r h <"$p/c$N/memory.high"
	[ "$h" = "$L" ] || fail "N=$N: c$N real memory.high '$h' after the subtree write returned (want $L)"
	rss1=$(rss_kb "$DAEMON_PID")
	fd1=$(fds "$DAEMON_PID")
	w0=$(wakeups "$DAEMON_PID")
	by_thread "$DAEMON_PID" >/tmp/wk0
	odt sleep 5000
	idle=$(($(wakeups "$DAEMON_PID") - w0))
	by_thread "$DAEMON_PID" >/tmp/wk1
	log "N=$N idle wake-ups by thread: $(awk 'NR == FNR { a[$1] = $3; next } $3 != a[$1] { printf "%s(%s)+%d ", $2, $1, $3 - a[$1] }' /tmp/wk0 /tmp/wk1)"
	# the next 5 s: the loop has read the inotify echo of the write's N memory.max writes
	w0=$(wakeups "$DAEMON_PID")
	odt sleep 5000
	idle2=$(($(wakeups "$DAEMON_PID") - w0))
	log "N=$N resident kB by mapping: $(big_maps "$DAEMON_PID")"
	log "N=$N mappings (rss/size kB): $(maps_detail "$DAEMON_PID")"
	log "N=$N thread stacks resident (kB): $(stacks "$DAEMON_PID")"
	log "N=$N $(grep AnonHugePages "/proc/$DAEMON_PID/smaps_rollup")"
	log "N=$N malloc blocks of the large anonymous mappings (kB): $(chunks "$DAEMON_PID")"
	log "N=$N threads: $(cat /proc/"$DAEMON_PID"/task/*/comm | sort | uniq -c | tr -s ' \n' ' ')"
	t0=$(pressure now)
	n=$(ls "$sp" | grep -c '^c[0-9]')
	tls=$(ms_since "$t0")
	[ "$n" = "$N" ] || fail "N=$N: ls through the shadow listed $n children"

	kill_daemon
	t0=$(pressure now)
	n0=$(grep -c 'serving ' /tmp/oomdelayfs.log)
	_launch_daemon
	# the shadow answers before the tree is adopted: a cgroup read meanwhile is adopted there
	wait_for 600000 delay_is "$sp/c$N/memory.oom_delay_millisecs" 5000 ||
		fail "N=$N: c$N delay reads '$(cat "$sp/c$N/memory.oom_delay_millisecs" 2>&1)' 600 s after the restart"
	tdelay=$(ms_since "$t0")
	# "serving": every cgroup adopted (its state read, watched)
	wait_for 600000 _served "$n0" || fail "N=$N: the restarted daemon did not serve within 600 s"
	tserve=$(ms_since "$t0")
	tadopt=$(sed -n 's/.* cgroups found in \([0-9]*\).*/\1/p' /tmp/oomdelayfs.log | tail -n 1)
	rss2=$(rss_kb "$DAEMON_PID")
	fd2=$(fds "$DAEMON_PID")
	log "N=$N after the restart, mappings (rss/size kB): $(maps_detail "$DAEMON_PID")"
	log "N=$N after the restart, thread stacks resident (kB): $(stacks "$DAEMON_PID")"
	log "N=$N after the restart, $(grep AnonHugePages "/proc/$DAEMON_PID/smaps_rollup")"
	log "N=$N after the restart, malloc blocks of the large anonymous mappings (kB): $(chunks "$DAEMON_PID")"
	# what of it was transient: a batch still with the actuators, a buffer of the walk
	odt sleep 3000
	rss3=$(rss_kb "$DAEMON_PID")
	log "N=$N 3 s later: RSS $rss3 kB, mappings (rss/size kB): $(maps_detail "$DAEMON_PID")"
	bad=0
	for i in 1 $((N / 2)) "$N"; do
		read -r m <"$p/c$i/memory.max"
		[ "$m" = $((L + 64 * MiB)) ] || bad=$((bad + 1))
	done
	[ "$bad" = 0 ] || fail "N=$N: $bad sampled cgroups without real memory.max = L + ceiling after the restart"
	stop_daemon
	[ "$DAEMON_STOP" = term ] || fail "N=$N: the daemon did not stop on SIGTERM ($DAEMON_STOP)"
	read -r m <"$p/c$N/memory.max"
	[ "$m" = "$L" ] || fail "N=$N: c$N real memory.max '$m' after the hand-back (want $L)"

	echo "BENCH $OOMD_KERNEL scale N=$N mkdir_ms=$tmk start_ms=$tstart subtree_write_ms=$twrite" \
		"rss_kb=$rss1 fds=$fd1 idle_wakeups_5s=$idle idle_wakeups_next_5s=$idle2 ls_ms=$tls restart_serve_ms=$tserve" \
		"restart_adopt_ms=$tadopt restart_delay_ms=$tdelay rss_after_kb=$rss2 rss_after_3s_kb=$rss3 fds_after=$fd2 handback_ms=$DAEMON_STOP_MS"
	summary="$summary; N=$N: write ${twrite} ms, RSS $(awk -v k="$rss1" 'BEGIN { printf "%.1f", k / 1024 }') MiB (after the restart $(awk -v k="$rss2" 'BEGIN { printf "%.1f", k / 1024 }')), $fd1 fds, $idle then $idle2 wake-ups/5 s, ls ${tls} ms, restart to delay ${tdelay} ms, to all adopted ${tserve} ms"
	(cd "$p" && seq 1 "$N" | sed 's/^/c/' | xargs rmdir) || fail "rmdir of $N cgroups"
	rmdir "$p" || fail "rmdir $p"
done
pass "${summary#; } (goals at 10,000: restart <= 2000 ms, RSS <= 16 MiB, 0 wake-ups)"
