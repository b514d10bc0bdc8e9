# bench-restart (issue 23, deliverable 4; a benchmark, not a test: runs only when named): where a
# restart's time goes at N managed cgroups (OOMD_RESTART_N, default 10,000; VM memory:
# OOMD_VM_MEM=3072). N siblings made in the real tree with a real memory.max of 16 MiB, the daemon
# started, the delay written once on their parent through the shadow (a subtree write: all N
# managed, each with its persisted state), then OOMD_RESTART_ROUNDS (default 3) times: drop_caches,
# SIGKILL, a new daemon, and ms until the last child's delay reads back 5000 through the shadow
# (the mount serves again; that cgroup adopted on its first use: one process, readlat until,
# reading every 5 ms) and until "serving" (all adopted).
# Each round logs the restarted daemon's own lines (glib's wall-clock stamps; with its
# "answering" line, which says how long after exec the mount answered).
# Profiling (each adds a round): OOMD_RESTART_STRACE=1: one more round with the daemon under
# `strace -f --seccomp-bpf -tt` of its process, mount and descriptor-creating calls (needs
# OOMD_VM_EXTRA_BINS=/usr/bin/strace), the trace up to the first FUSE reply logged;
# OOMD_RESTART_PERF=1: one more round under `perf record -a -g` for 3 s (OOMD_VM_EXTRA_BINS=/usr/bin/perf),
# the profile by command and shared object, and the top symbols, logged.
# BENCH lines: BENCH <kernel> restart N=<n> round=<r> serve_ms=<ms> adopted_ms=<ms>
# only when named
# timeout: 2400
. /oomd/lib.sh
N=${OOMD_RESTART_N:-10000}
ROUNDS=${OOMD_RESTART_ROUNDS:-3}
L=$((16 * MiB))
# the fixed part of any start: exec and the dynamic linker (--version maps every library and exits)
t0=$(now_ms)
/bin/oomdelayfs --version >/dev/null
log "exec of /bin/oomdelayfs --version to its exit: $(($(now_ms) - t0)) ms; the dynamic linker's own count:" \
	"$(LD_DEBUG=statistics /bin/oomdelayfs --version 2>&1 | grep -i 'total startup time' | tr -s ' \t' ' ')"
w0=$(cat /proc/sys/fs/inotify/max_user_watches)
trap 'echo "$w0" >/proc/sys/fs/inotify/max_user_watches' EXIT
need=$((3 * N + 4096))
[ "$w0" -ge "$need" ] || echo "$need" >/proc/sys/fs/inotify/max_user_watches
p=$(mkcg "r$N")
setknob "$p" cgroup.subtree_control +memory
sp=/shadow${p#$CGROOT}
(cd "$p" && seq 1 "$N" | sed 's/^/c/' | xargs mkdir) || fail "mkdir of $N cgroups"
for i in $(seq 1 "$N"); do
	echo "$L" >"$p/c$i/memory.max" || fail "real memory.max of c$i"
done
n0=$(grep -c 'serving ' /tmp/oomdelayfs.log 2>/dev/null)
start_daemon /shadow
wait_for 600000 _served "${n0:-0}" || fail "not serving within 600 s"
echo 5000 >"$sp/memory.oom_delay_millisecs" || fail "the delay on the parent"
read -r h <"$p/c$N/memory.high"
[ "$h" = "$L" ] || fail "c$N real memory.high '$h' (want $L: managed)"
log "N=$N managed; daemon RSS $(awk '/^VmRSS:/ { print $2 }' "/proc/$DAEMON_PID/status") kB"

extra=0
[ "${OOMD_RESTART_PERF:-0}" = 1 ] && extra=$((extra + 1))
[ "${OOMD_RESTART_STRACE:-0}" = 1 ] && extra=$((extra + 1))
summary=''
r=0
while [ "$r" -lt $((ROUNDS + extra)) ]; do
	r=$((r + 1))
	mode=plain
	if [ "$r" -gt "$ROUNDS" ]; then
		if [ "${OOMD_RESTART_PERF:-0}" = 1 ] && [ "$r" = $((ROUNDS + 1)) ]; then mode=perf; else mode=strace; fi
	fi
	sync
	echo 2 >/proc/sys/vm/drop_caches
	odt sleep 1000
	kill_daemon
	# the daemon under strace is strace's child: the next kill must reach the daemon
	[ -n "${REAL_PID:-}" ] && { kill -KILL "$REAL_PID" 2>/dev/null; wait_for 5000 dead "$REAL_PID"; }
	REAL_PID=''
	nl=$(wc -l </tmp/oomdelayfs.log)
	n0=$(grep -c 'serving ' /tmp/oomdelayfs.log)
	PERF_PID=''
	if [ "$mode" = perf ]; then
		perf record -a -g -F 997 -o /tmp/perf.data -- sleep 3 >/tmp/perf.out 2>&1 &
		PERF_PID=$!
		odt sleep 300
	fi
	log "round $r ($mode): launching at $(date +%T)"
	t0=$(now_ms)
	if [ "$mode" = strace ]; then
		OOMD_DAEMON_WRAP="strace -f --seccomp-bpf -tt -o /tmp/st -e trace=%process,mount,umount2,statfs,mlockall,memfd_create,inotify_init1,writev,pipe2,socket,prctl,setpriority,sched_setscheduler" \
			_launch_daemon
	else
		_launch_daemon
	fi
	# One process reads every 5 ms (readlat until): the figure is the daemon's, not a shell's
	# fork per try (cat, odt now and usleep each round came ~300 ms apart under TCG while the
	# walk held a vCPU at niceness -20: 461-1,368 ms read against 261-728 ms answering).
	readlat until "$sp/c$N/memory.oom_delay_millisecs" 5000 --since "$t0" --every-ms 5 \
		--timeout 600000 >/tmp/until ||
		fail "round $r: c$N delay not read as 5000 600 s after the restart: $(cat /tmp/until)"
	tserve=$(sed -n 's/^ms=\([0-9]*\) .*/\1/p' /tmp/until)
	wait_for 600000 _served "$n0" || fail "round $r: not serving within 600 s"
	tadopt=$(($(now_ms) - t0))
	[ "$mode" = strace ] && REAL_PID=$(pidof oomdelayfs | tr ' ' '\n' | grep -v "^$DAEMON_PID\$" | head -n 1)
	tanswer=$(sed -n 's/.*answering on .* \([0-9]*\) ms after the start.*/\1/p' /tmp/oomdelayfs.log | tail -n 1)
	echo "BENCH $OOMD_KERNEL restart N=$N round=$r mode=$mode serve_ms=$tserve answering_ms=${tanswer:-?} adopted_ms=$tadopt"
	summary="$summary $mode $tserve/$tadopt ms;"
	log "round $r: the client's reads (ms after the launch:outcome, each change): $(cat /tmp/until)"
	log "round $r: the restarted daemon's log (but its per-cgroup lines):"
	tail -n +"$((nl + 1))" /tmp/oomdelayfs.log | grep -v 'adopted persisted state$' | head -n 40
	echo "round $r: per-cgroup lines: $(tail -n +"$((nl + 1))" /tmp/oomdelayfs.log | grep -c 'adopted persisted state$')"
	if [ -n "$PERF_PID" ]; then
		wait "$PERF_PID"
		cat /tmp/perf.out
		echo "--- perf by command and object"
		perf report -i /tmp/perf.data --stdio --no-children --sort comm,dso 2>/dev/null | grep -v '^#' | grep '%' | head -n 40
		echo "--- perf by symbol"
		perf report -i /tmp/perf.data --stdio --no-children --sort comm,sym -g none 2>/dev/null | grep -v '^#' | grep '%' | head -n 60
	fi
	if [ "$mode" = strace ]; then
		echo "--- strace of the start, until 3 replies on /dev/fuse"
		awk '{ print } /writev\(/ { n++ } n >= 3 { exit }' /tmp/st | head -n 200
		echo "--- strace: calls by kind"
		awk '{ for (i = 2; i <= NF; i++) if ($i ~ /^[a-z_0-9]+\(/) { sub(/\(.*/, "", $i); c[$i]++; break } } END { for (k in c) print c[k], k }' /tmp/st | sort -rn | head -n 20
	fi
done
if [ -n "${REAL_PID:-}" ]; then
	kill -TERM "$REAL_PID"
	wait_for 60000 dead "$REAL_PID"
	DAEMON_PID=''
fi
stop_daemon
(cd "$p" && seq 1 "$N" | sed 's/^/c/' | xargs rmdir) || fail "rmdir of $N cgroups"
rmdir "$p"
pass "N=$N restart (serve/adopted):$summary"
