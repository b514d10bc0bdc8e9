# lib.sh - helpers for VM scenarios (busybox sh). Sourced by every scenario:
#   . /oomd/lib.sh
# The runner (/init) sets OOMD_SCENARIO, OOMD_KERNEL, OOMD_RESULT (the result file) and OOMD_CG
# (a cgroup directory reserved for this scenario; created on demand by mkcg).
# A scenario ends with exactly one of: pass "figures", fail "reason", skip "reason".

: "${OOMD_SCENARIO:=manual}" "${OOMD_KERNEL:=?}" "${OOMD_RESULT:=/tmp/oomd-result.manual}"
: "${OOMD_CG:=/sys/fs/cgroup/test-$OOMD_SCENARIO}"
CGROOT=/sys/fs/cgroup
MiB=1048576

_result() { # the first result of a scenario wins (fail may run in a subshell)
	[ -s "$OOMD_RESULT" ] || echo "$*" >"$OOMD_RESULT"
	echo "$*"
	exit 0
}
pass() { _result "PASS $*"; }
fail() {
	if [ -n "${DAEMON_PID:-}" ] && [ -s /tmp/oomdelayfs.log ]; then
		echo "--- last lines of the oomdelayfs log:"
		tail -n 25 /tmp/oomdelayfs.log
	fi
	_result "FAIL $*"
}
skip() { _result "SKIP $*"; }
log() { echo "$(now_ms) $*"; }

# cpus_down / cpus_up: run on CPU 0 alone, and back. For a scenario that switches the kernel's
# static keys (moving the memory controller between hierarchies does): under TCG a second vCPU
# can run a stale copy of the code being rewritten and crash the guest (see /init).
cpus_down() {
	for c in /sys/devices/system/cpu/cpu[1-9]*/online; do
		[ -e "$c" ] && { echo 0 >"$c" || echo "cannot take ${c%/online} offline"; }
	done
	return 0
}
cpus_up() {
	for c in /sys/devices/system/cpu/cpu[1-9]*/online; do
		[ "$(cat "$c" 2>/dev/null)" = 0 ] && { echo 1 >"$c" || echo "cannot bring ${c%/online} online"; }
	done
	return 0
}

# milliseconds on CLOCK_MONOTONIC
now_ms() { odt now; }

# mkcg NAME: create $OOMD_CG/NAME (with memory enabled in $OOMD_CG) and print its path
mkcg() {
	if [ ! -d "$OOMD_CG" ]; then
		mkdir "$OOMD_CG" || fail "mkdir $OOMD_CG"
	fi
	grep -qw memory "$OOMD_CG/cgroup.subtree_control" ||
		echo +memory >"$OOMD_CG/cgroup.subtree_control" || fail "cannot enable +memory in $OOMD_CG"
	mkdir -p "$OOMD_CG/$1" || fail "mkdir $OOMD_CG/$1"
	echo "$OOMD_CG/$1"
}

# mkchildren NAME N: mkcg NAME with the memory controller given to its children c0 .. c(N-1),
# made at once; prints its path
mkchildren() {
	_p=$(mkcg "$1")
	setknob "$_p" cgroup.subtree_control +memory
	(cd "$_p" && seq 0 $(($2 - 1)) | sed 's/^/c/' | xargs mkdir) || fail "mkdir of $2 cgroups in $_p"
	echo "$_p"
}

# setknob CG FILE VALUE: write a cgroup knob or fail
setknob() {
	echo "$3" >"$1/$2" || fail "cannot write '$3' to $1/$2"
}

# evkey CG KEY: value of KEY in CG/memory.events
evkey() { odt key "$1/memory.events" "$2"; }
# cgkey FILE KEY: value of KEY in any flat-keyed file
cgkey() { odt key "$1" "$2"; }
# current CG: memory.current in bytes
current() { cat "$1/memory.current"; }
# mib BYTES: bytes to MiB with one decimal
mib() { awk -v b="$1" 'BEGIN{printf "%.1f", b / 1048576}'; }

# hold_state CG SHADOWCG: what the kernel and the shadow say, for a "no hold" failure message
hold_state() {
	_ev=$(tr '\n' ' ' <"$1/memory.events" 2>&1)
	_oc=$(tr '\n' ',' <"$2/memory.oom_control" 2>&1)
	_hs=dead
	[ -n "${HOG_PID:-}" ] && alive "$HOG_PID" && _hs="alive, $(hog_kb 2>/dev/null) KiB touched"
	echo "usage $(cat "$1/memory.current" 2>&1), real max $(cat "$1/memory.max" 2>&1)" \
		"high $(cat "$1/memory.high" 2>&1), events: $_ev; shadow: delay" \
		"$(cat "$2/memory.oom_delay_millisecs" 2>&1), oom_control $_oc; hog $_hs"
}

# start_hog CG MB [odt hog options]: start a hog in CG; sets HOG_PID and HOG_REPORT
start_hog() {
	_cg=$1 _mb=$2
	shift 2
	HOG_REPORT=/tmp/hog.$$.$(basename "$_cg").report
	rm -f "$HOG_REPORT"
	odt hog "$_mb" --cgroup "$_cg" --report "$HOG_REPORT" "$@" &
	HOG_PID=$!
}
# hog_kb: KiB the hog has touched so far (from its report)
hog_kb() { odt progress "$HOG_REPORT"; }
# alive PID: true while PID exists and is not a zombie
alive() {
	[ -d "/proc/$1" ] || return 1
	! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null
}

# fast_ms: sets FAST_MS to milliseconds of the realtime clock, from ash's $EPOCHREALTIME,
# without a fork: a fork and exec of `odt now` costs about 50 ms of the guest's CPU under TCG
# (x-waitcost on 6.1, 2026-12-06: 200 calls 9,855 ms; grep 2,339 ms), and wait_for called it
# at every 10 ms step. For durations only (now_ms is CLOCK_MONOTONIC, as the programs' times);
# the VM runs no NTP, so nothing steps the realtime clock.
fast_ms() {
	_fm_e=$EPOCHREALTIME
	FAST_MS=$((${_fm_e%.*} * 1000 + (1${_fm_e#*.} - 1000000) / 1000))
}
# wait_for TIMEOUT_MS CMD...: run CMD every 10 ms until it succeeds; false on timeout.
# Sets WAITED_MS to the time it took.
wait_for() {
	_to=$1
	shift
	fast_ms
	_wf0=$FAST_MS
	while :; do
		if "$@"; then
			fast_ms
			WAITED_MS=$((FAST_MS - _wf0))
			return 0
		fi
		fast_ms
		WAITED_MS=$((FAST_MS - _wf0))
		[ "$WAITED_MS" -lt "$_to" ] || return 1
		usleep 10000
	done
}
# helpers for wait_for
above() { [ "$(current "$1")" -gt "$2" ]; }   # above CG BYTES
dead() { ! alive "$1"; }                       # dead PID
evgt() { [ "$(evkey "$1" "$2")" -gt "$3" ]; }  # evgt CG KEY VALUE
frozen() { grep -q '^frozen 1' "$1/cgroup.events"; }
unpopulated() { grep -q '^populated 0' "$1/cgroup.events"; }

# the daemon (needed by the r-* scenarios)
# start_daemon MOUNTPOINT [ARGS...]: run /bin/oomdelayfs ARGS MOUNTPOINT in the background,
# logging to /tmp/oomdelayfs.log, and wait (10 s) until MOUNTPOINT is in /proc/mounts.
# Extra arguments for every start can be given in OOMD_DAEMON_ARGS. Sets DAEMON_PID, SHADOW.
start_daemon() {
	SHADOW=$1
	shift
	[ -x /bin/oomdelayfs ] || skip "oomdelayfs is not built"
	mkdir -p "$SHADOW"
	_launch_daemon "$@"
	if ! wait_for 10000 _mounted "$SHADOW"; then
		echo "--- oomdelayfs log:"
		cat /tmp/oomdelayfs.log
		alive "$DAEMON_PID" || fail "oomdelayfs exited before mounting $SHADOW"
		fail "oomdelayfs did not mount $SHADOW within 10 s"
	fi
	log "oomdelayfs (pid $DAEMON_PID) mounted $SHADOW in ${WAITED_MS} ms"
}
# _launch_daemon [ARGS...]: /bin/oomdelayfs in the background on $SHADOW; sets DAEMON_PID
_launch_daemon() {
	# shellcheck disable=SC2086
	# OOMD_DAEMON_WRAP: a command the daemon runs under (s-caps: odt capbset ...)
	$OOMD_DAEMON_WRAP /bin/oomdelayfs $OOMD_DAEMON_ARGS "$@" "$SHADOW" >>/tmp/oomdelayfs.log 2>&1 &
	DAEMON_PID=$!
}
# kill_daemon: SIGKILL the daemon (a crash: no clean-up, the mount goes stale) and reap it
kill_daemon() {
	kill -KILL "$DAEMON_PID"
	wait_for 5000 dead "$DAEMON_PID" || fail "daemon alive 5 s after SIGKILL"
	wait "$DAEMON_PID" 2>/dev/null
}
# restart_daemon [ARGS...]: start the daemon again on $SHADOW (over the stale mount a
# kill_daemon left) and wait (15 s) for its "serving" log line
_served() { [ "$(grep -c 'serving ' /tmp/oomdelayfs.log)" -gt "$1" ]; }
restart_daemon() {
	_n0=$(grep -c 'serving ' /tmp/oomdelayfs.log)
	_launch_daemon "$@"
	wait_for 15000 _served "$_n0" || fail "the restarted daemon did not serve $SHADOW within 15 s"
}
# _mounted MP: a FUSE file system is mounted on MP (only FUSE: the shadow may be mounted over
# /sys/fs/cgroup, where the real cgroup2 mount must never count, nor be unmounted)
_mounted() { awk -v m="$1" '$2 == m && $3 ~ /^fuse/ {f = 1} END {exit !f}' /proc/mounts; }
# floor_exact REALDIR N MNT: floorfs -s -r REALDIR -F 0 on MNT (the floor sending the shadow's
# requests: docs/DESIGN.md, "three floors") over REALDIR's cgroups c0..c<N-1>; sets FLOOR_PID
floor_exact() {
	mkdir -p "$3"
	floorfs -n "$2" -s -r "$1" -F 0 "$3" &
	FLOOR_PID=$!
	wait_for 10000 _mounted "$3" || fail "floorfs -r $1 did not mount $3"
}
# stop_daemon: SIGTERM and wait (5 s) for the daemon to exit and unmount; otherwise SIGKILL,
# and if it still hangs (e.g. in a request to its own mount) abort its FUSE connections.
# Never blocks for more than about 10 s. Sets DAEMON_STOP (how it went) and DAEMON_STOP_MS.
stop_daemon() {
	[ -n "${DAEMON_PID:-}" ] || return 0
	_t0=$(now_ms)
	DAEMON_STOP=term
	kill -TERM "$DAEMON_PID" 2>/dev/null
	if ! wait_for 5000 dead "$DAEMON_PID"; then
		echo "stop_daemon: oomdelayfs did not exit within 5 s of SIGTERM; SIGKILL"
		DAEMON_STOP=kill
		kill -KILL "$DAEMON_PID" 2>/dev/null
		if ! wait_for 2000 dead "$DAEMON_PID"; then
			echo "stop_daemon: oomdelayfs hangs after SIGKILL; aborting FUSE connections"
			DAEMON_STOP=abort
			for _a in /sys/fs/fuse/connections/*/abort; do
				[ -e "$_a" ] && echo 1 >"$_a" 2>/dev/null
			done
			wait_for 2000 dead "$DAEMON_PID" || DAEMON_STOP=hung
		fi
	fi
	dead "$DAEMON_PID" && wait "$DAEMON_PID" 2>/dev/null
	if _mounted "$SHADOW"; then
		echo "stop_daemon: $SHADOW still mounted after the daemon ${DAEMON_STOP}; lazy unmount"
		umount -l "$SHADOW" 2>/dev/null
	fi
	DAEMON_STOP_MS=$(($(now_ms) - _t0))
	echo "stop_daemon: $DAEMON_STOP, ${DAEMON_STOP_MS} ms"
	DAEMON_PID=''
}

# the scenario's own leftovers are killed by the runner (cgroup.kill on its cgroups)

# held_until DEADLINE_MS CG K0 PID...: until DEADLINE_MS (CLOCK_MONOTONIC ms), fail if CG's
# oom_kill leaves K0 or a PID dies. The clock is read after the checks, so a slow shell (TCG)
# never blames the daemon for a kill that came after the deadline. The clock is fast_ms's,
# set onto CLOCK_MONOTONIC once with the realtime clock read *before* the monotonic one, so it
# runs ahead of CLOCK_MONOTONIC by the fork and exec between the two reads, never behind (the
# loop ends a little early, never late). Read after them, as it was, the offset fell behind by
# whatever that fork took over a fixed 20 ms margin: r-race on 6.1 under two TCG VMs (CI
# 2026-12-06) failed a hog "dead 3 ms before the deadline" that its kill watch would have
# timed. More than 1 s before the deadline it looks every 200 ms (what comes between two looks
# is still seen before the deadline), in the last second every 20 ms: a look at every 20 ms
# step for the whole hold kept one vCPU busy under TCG.
held_until() {
	_dl=$1 _hcg=$2 _k0=$3
	shift 3
	fast_ms
	_hoff=$(($(now_ms) - FAST_MS + 1)) # + 1: both clocks read in whole ms
	while :; do
		_k=$(evkey "$_hcg" oom_kill)
		_dead=''
		for _p in "$@"; do alive "$_p" || _dead=$_p; done
		fast_ms
		_t=$((FAST_MS + _hoff))
		[ "$_t" -lt "$_dl" ] || return 0
		[ "$_k" = "$_k0" ] || fail "real oom_kill moved $((_dl - _t)) ms before the deadline (rule 9)"
		[ -z "$_dead" ] || fail "pid $_dead died $((_dl - _t)) ms before the deadline"
		if [ $((_dl - _t)) -gt 1000 ]; then usleep 200000; else usleep 20000; fi
	done
}
# kill_watch CG [--emptied]: from now on a memory-locked inotify watcher (pressure killwatch)
# notes when CG's real oom_kill first moves (--emptied: when CG is first empty). Start it before
# the kill can come: unlike a polling shell, which a loaded VM can leave behind the deadline, it
# cannot miss a kill that comes early. Sets KW_PID.
kill_watch() {
	command -v pressure >/dev/null || fail "tests/vm/progs/pressure is not built"
	pressure killwatch "$1" 0 --timeout 120000 "${2:-}" >"/tmp/kw.$(basename "$1")" 2>&1 &
	KW_PID=$!
}
# kill_late CG DEADLINE_NS: ms from the deadline to what kill_watch saw (CLOCK_BOOTTIME); fails
# if it came before the deadline (rule 9) or not within 10 s
kill_late() {
	_kw=/tmp/kw.$(basename "$1")
	wait_for 10000 test -s "$_kw" || fail "the kill watcher of $1 saw nothing within 10 s: $(cat "$_kw")"
	_kl=$(awk -v d="$2" '{ printf "%.1f", $4 - d / 1e6 }' "$_kw")
	awk -v l="$_kl" 'BEGIN { exit !(l >= 0) }' || fail "the kernel's oom_kill of $1 moved $_kl ms relative to the deadline: BEFORE it (rule 9): $(cat "$_kw")"
	echo "$_kl"
}
# deadline_ms CG: the hold's deadline from the daemon's persisted state (CLOCK_BOOTTIME =
# CLOCK_MONOTONIC in the VM, which never suspends). under_oom reads 1 as soon as the engine
# decided; the state is written an instant later by the action that follows, so wait for it.
# A short hold can end (and its state be removed) before a descheduled shell reads it: the
# daemon's log line for the hold ("<path>: over its limit ... deadline=<ns>") is the fallback.
_deadline_of() {
	_x=$(odt xattr get "$1" trusted.oomdelayfs.state 2>/dev/null | sed -n 's/.*deadline=\([0-9]*\).*/\1/p')
	[ -n "$_x" ] || _x=$(grep -F "$1: over its limit" /tmp/oomdelayfs.log 2>/dev/null | tail -n 1 |
		sed -n 's/.*deadline=\([0-9]*\).*/\1/p')
	echo "$_x"
}
_has_deadline() { [ -n "$(_deadline_of "$1")" ]; }
deadline_ns() {
	wait_for 3000 _has_deadline "$1" || fail "no deadline for $1 within 3 s (neither its persisted state nor the daemon's log)"
	_deadline_of "$1"
}
deadline_ms() {
	_d=$(deadline_ns "$1")
	echo $((_d / 1000000))
}
# ms_left DEADLINE_NS: ms from now to the deadline (negative once it passed), on CLOCK_BOOTTIME
ms_left() { echo $(($1 / 1000000 - $(pressure now | cut -d. -f1))); }
# kill_times CG DEADLINE_NS: "<began> <returned>", when the daemon's kill write for CG (memory.max
# or cgroup.kill) began and returned, minus the deadline, in ms (from its log line)
kill_times() {
	_kt=$(grep -F "$1: delay over" /tmp/oomdelayfs.log | tail -n 1 |
		sed -n 's/.* in \([0-9.]*\) ms (write began at boottime \([0-9.]*\) ms[;)].*/\1 \2/p')
	[ -n "$_kt" ] || fail "no kill logged by the daemon for $1"
	echo "$_kt" | awk -v d="$2" '{ printf "%.1f %.1f", $2 - d / 1e6, $2 + $1 - d / 1e6 }'
}

# permissions (s-* scenarios)
# delegate CG UID: delegate CG to UID the cgroup-v2 way: the directory, cgroup.procs,
# cgroup.threads and cgroup.subtree_control chowned; memory.max and the other knobs stay root's
delegate() {
	chown "$2:$2" "$1" "$1/cgroup.procs" "$1/cgroup.threads" "$1/cgroup.subtree_control" ||
		fail "cannot delegate $1 to uid $2"
}
# lsattrs FILE: mode, uid and gid as ls -ln shows them
lsattrs() { ls -ln "$1" | awk '{print $1, $3, $4}'; }
# write_denied UID FILE VALUE: UID's write of VALUE to FILE must fail with EACCES
write_denied() {
	_o=$(odt asuser "$1" "$1" odt write "$2" "$3" 2>&1) && fail "uid $1 wrote '$3' to $2 ($_o)"
	case $_o in *"Permission denied"*) ;; *) fail "uid $1's write to $2: '$_o', not EACCES" ;; esac
}
# owner_moves UID CG SHADOWCG: a process of UID that root put in CG/c1 is moved by UID to c2
# through SHADOWCG/c2/cgroup.procs (delegation: UID owns CG's cgroup.procs, c1 and c2)
owner_moves() {
	odt asuser "$1" "$1" sleep 600 &
	_sp=$!
	usleep 100000
	echo "$_sp" >"$2/c1/cgroup.procs" || fail "root cannot put pid $_sp in $2/c1"
	_o=$(odt asuser "$1" "$1" sh -c "echo $_sp >$3/c2/cgroup.procs" 2>&1) ||
		fail "uid $1 cannot move $_sp from c1 to c2 through $3: $_o"
	grep -q "/c2\$" "/proc/$_sp/cgroup" || fail "pid $_sp is in $(cat "/proc/$_sp/cgroup"), not c2"
	kill "$_sp"
}
# survival (f-ctr-restart, f-upgrade, f-inflight): a daemon started with --supervise
# server_pid: the server the supervisor ($DAEMON_PID) runs now; false when none
server_pid() {
	for _p in /proc/[0-9]*; do
		read -r _sp _sc _ss _spp _ <"$_p/stat" 2>/dev/null || continue
		[ "$_spp" = "$DAEMON_PID" ] && { echo "$_sp"; return 0; }
	done
	return 1
}
# charge_parents: the daemon ($DAEMON_PID) and its children (its charge zygote, fs/zygote.h),
# one pid a line: the parents of the charged calls' children (s-charge*)
charge_parents() {
	echo "$DAEMON_PID"
	for _p in /proc/[0-9]*; do
		read -r _sp _sc _ss _spp _ <"$_p/stat" 2>/dev/null || continue
		[ "$_spp" = "$DAEMON_PID" ] && echo "$_sp"
	done
}
# takeovers: how many times a server took the kept FUSE connection over (its log line)
takeovers() { grep -c 'took over the FUSE connection' /tmp/oomdelayfs.log; }
_took_over() { [ "$(takeovers)" -gt "$1" ]; }
# restart_server KIND: end the supervised server the way KIND says and wait (20 s) for its
# successor's takeover: kill (SIGKILL, a crash), watchdog (SIGSTOP: the supervisor's
# --watchdog-sec kills it), upgrade (SIGUSR2 to the supervisor). Prints the ms to the takeover.
restart_server() {
	_rs=$(server_pid) || fail "no server under the supervisor $DAEMON_PID"
	_rn=$(takeovers)
	_rv=$(grep -c 'serving ' /tmp/oomdelayfs.log)
	_rt=$(now_ms)
	case "$1" in
	kill) kill -KILL "$_rs" ;;
	watchdog) kill -STOP "$_rs" ;;
	upgrade) kill -USR2 "$DAEMON_PID" ;;
	*) fail "restart_server: unknown kind $1" ;;
	esac
	wait_for 20000 _took_over "$_rn" || fail "no takeover within 20 s of the $1: $(tail -n 6 /tmp/oomdelayfs.log)"
	_rg=$(($(now_ms) - _rt))
	# and the tree adopted ("serving"): what happens before that is the gap's
	wait_for 20000 _served "$_rv" || fail "the successor did not serve within 20 s of the $1"
	echo "$_rg"
}

# killed_on_time CG SHADOWCG: a hog started over CG's limit is held and killed after the
# daemon's deadline (the kernel's oom_kill moves, within 2 s of it); prints the kill's lateness
# in ms. For the s-* scenarios: whatever a hostile caller did, the kill is still on time.
killed_on_time() {
	_k0=$(evkey "$1" oom_kill)
	kill_watch "$1"
	start_hog "$1" 256
	_dl=$(deadline_ns "$1")
	wait_for 10000 dead "$HOG_PID" || fail "hog alive 10 s after the onset ($(hold_state "$1" "$2"))"
	_kl=$(kill_late "$1" "$_dl")
	awk -v l="$_kl" 'BEGIN { exit !(l < 2000) }' || fail "the kill came $_kl ms after the deadline"
	[ "$(evkey "$1" oom_kill)" -gt "$_k0" ] || fail "the kernel's oom_kill did not move"
	echo "$_kl"
}

# ---- a native cgroup-v1 memory hierarchy (6.1; d-v1diff, d-v1notify) ----
# To move the memory controller to a v1 hierarchy no non-root memcg may be left, and every
# charged page pins one. v1native_enter "$@" (first thing in the scenario) moves the
# scenario's processes to the root cgroup, ends the runner's timeout watchdog of this scenario
# (its pages are charged to the scenario's cgroup) and re-executes the scenario with
# "phase2 <its cgroup>"; it returns only in that second run (V1N_CG: the scenario's cgroup).
v1native_enter() {
	if [ "${1:-}" != phase2 ]; then
		mycg=$CGROOT$(sed -n 's/^0:://p' /proc/self/cgroup)
		for p in $(cat "$mycg/cgroup.procs"); do
			if tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline" | grep -q '^timeout '; then
				[ "$p" = $$ ] || { echo "ending the runner's watchdog (pid $p) of this scenario"; kill -KILL "$p"; }
			else
				echo "$p" >"$CGROOT/cgroup.procs" 2>/dev/null
			fi
		done
		echo $$ >"$CGROOT/cgroup.procs"
		exec sh "$0" phase2 "$mycg"
	fi
	V1N_CG=$2
}
# v1native_mount SECONDS: our own watchdog (V1N_WD; the runner's is gone), one CPU while the
# controller moves (cpus_down: static keys), the controller released from v2 and mounted as v1
# on /v1mem. Dying memcgs of earlier scenarios pinned by their files in /tmp (tmpfs pages) are
# released by removing those files once; if the controller stays pinned: skip with the reason.
v1native_mount() {
	( sleep "$1" & s=$!; trap 'kill $s; exit 0' TERM; wait $s; echo "$OOMD_SCENARIO: own watchdog"; kill -TERM $$ ) &
	V1N_WD=$!
	cpus_down
	log "running on $(grep -c '^processor' /proc/cpuinfo) cpu(s) while the controller moves"
	for d in $(find "$CGROOT" -mindepth 1 -type d | sort -r); do
		echo -memory >"$d/cgroup.subtree_control" 2>/dev/null
	done
	echo -memory >"$CGROOT/cgroup.subtree_control" || fail "cannot release memory from the v2 root"
	sync
	echo 3 >/proc/sys/vm/drop_caches
	mkdir -p /v1mem
	i=0
	until mount -t cgroup -o memory none /v1mem 2>/tmp/v1mount.err; do
		i=$((i + 1))
		if [ $i = 1 ]; then
			find /tmp -xdev -type f ! -path "$OOMD_RESULT" ! -name 'v1mount.err' -exec rm -f {} + 2>/dev/null
			log "removed the files earlier scenarios left in /tmp: $(grep memory /proc/cgroups)"
		fi
		if [ $i -ge 20 ]; then
			echo +memory >"$CGROOT/cgroup.subtree_control"
			kill $V1N_WD
			skip "cannot mount a v1 memory hierarchy: $(cat /tmp/v1mount.err) (a non-root memcg is still" \
				"pinned by charged pages; run $OOMD_SCENARIO alone or first)"
		fi
		sleep 0.5
	done
	log "native v1 memory hierarchy mounted on /v1mem after $i retries"
}
# v1native_umount: waits for the dying v1 memcgs (v1 destroys its root at umount only when no
# child is left), unmounts, gives the controller back to v2, all CPUs back, and returns to the
# scenario's cgroup.
v1native_umount() {
	t0=$(now_ms)
	while [ "$(awk '$1 == "memory" {print $3}' /proc/cgroups)" != 1 ] && [ $(($(now_ms) - t0)) -lt 90000 ]; do
		echo 3 >/proc/sys/vm/drop_caches
		sleep 0.5
	done
	log "v1 memory cgroups left: $(awk '$1 == "memory" {print $3}' /proc/cgroups) after $(($(now_ms) - t0)) ms"
	umount /v1mem || fail "cannot unmount /v1mem"
	i=0
	until echo +memory >"$CGROOT/cgroup.subtree_control" 2>/dev/null; do
		i=$((i + 1))
		if [ $i -ge 60 ]; then
			grep memory /proc/cgroups
			fail "cannot give the memory controller back to cgroup v2"
		fi
		echo 3 >/proc/sys/vm/drop_caches
		sleep 0.5
	done
	log "memory controller back on cgroup v2 after $i retries"
	cpus_up
	echo $$ >"$V1N_CG/cgroup.procs" || echo "cannot return to $V1N_CG"
}

# swap_on: make swap of the emulated NVMe disk run-vm.sh attaches to a run whose scenarios say
# "# disk: swap"; skips with the reason when there is none. /init turns it off after the scenario.
swap_on() {
	_d=''
	for _i in 1 2 3 4 5 6 7 8 9 10; do
		for _c in /dev/nvme0n1 /dev/nvme1n1; do [ -b "$_c" ] && _d=$_c; done
		[ -n "$_d" ] && break
		sleep 0.5
	done
	[ -n "$_d" ] || skip "no swap disk (/dev/nvme0n1: the run needs a '# disk: swap' scenario header)"
	mkswap "$_d" >/dev/null 2>&1 || skip "mkswap $_d failed"
	# on one CPU: swapon may switch static keys (frontswap on 6.1), see cpus_down
	cpus_down
	swapon "$_d" || { cpus_up; skip "swapon $_d failed"; }
	cpus_up
	log "swap on $_d: $(awk 'NR > 1 {print $3 " KiB"}' /proc/swaps)"
}
swap_off() {
	awk 'NR > 1 {print $1}' /proc/swaps | while read -r _d; do swapoff "$_d"; done
	return 0
}
