# lib.sh - helpers for the sd scenarios (tests/sd/scenarios/*.sh; Debian 12's /bin/sh, dash).
# Every scenario begins with
#   . /payload/lib.sh
# and ends with exactly one of: pass "figures", fail "reason", skip "reason".
# The runner (runner.sh) sets OOMD_SCENARIO, OOMD_KERNEL, OOMD_RESULT (the result file) and
# OOMD_CURSOR (the journal's cursor when the scenario began). The scenario runs as root in a
# transient service of its own (its cgroup: system.slice/oomd-sd-NAME.service); PATH ends with
# /payload/bin (after the system's: its ctr is not containerd's) (the test programs: odt, readlat, inflight, v1listener, pressure, ...).
#
# What the payload holds (read-only, /payload):
#   deb/oomdelayfs_*.deb   the project's package, freshly built (scripts/build-deb.sh)
#   bin/                   tests/vm/progs of the build tree
#   images/rootfs.tar      a busybox root file system (docker import, podman import)
#   images/busybox.tar     the same as an image archive, docker-archive and OCI layout in one
#                          (docker load, podman load, ctr images import), named $SD_IMAGE
#   lib.sh runner.sh scenarios/

: "${OOMD_SCENARIO:=manual}" "${OOMD_KERNEL:=?}" "${OOMD_RESULT:=/run/oomd-sd/result.manual}"
: "${OOMD_CURSOR:=}"
PAYLOAD=/payload
SHADOW=/run/oomdelayfs/shadow
CGROOT=/sys/fs/cgroup
SD_IMAGE=localhost/oomd-busybox:latest
MiB=1048576
mkdir -p /run/oomd-sd

# --- results
_result() { # the first result of a scenario wins
	mkdir -p "$(dirname "$OOMD_RESULT")"
	[ -s "$OOMD_RESULT" ] || echo "$*" >"$OOMD_RESULT"
	echo "$*"
	# called in a subshell (x=$(mkcg ...)): end the scenario's own shell too, so that nothing
	# runs on after the result (a child's PPID is this shell; $$ is the scenario's shell)
	[ "$(sh -c 'echo $PPID')" = "$$" ] || kill -TERM "$$" 2>/dev/null
	exit 0
}
pass() { _result "PASS $*"; }
fail() { _result "FAIL $*"; } # the runner prints the context (sd_context) after a FAIL
skip() { _result "SKIP $*"; }
log() { echo "$(now_ms) $*"; }

# sd_context NAME CURSOR: what a failure report needs (the runner calls it after a FAIL)
sd_context() {
	echo "--- systemctl status oomdelayfs"
	systemctl status --no-pager --lines=0 oomdelayfs 2>&1 | head -n 20
	echo "--- journal of oomdelayfs.service since the scenario began (last 40 lines)"
	if [ -n "${2:-}" ]; then
		journalctl --no-pager --after-cursor="$2" -u oomdelayfs -o short-monotonic 2>&1 | tail -n 40
	else
		journalctl --no-pager -u oomdelayfs -o short-monotonic -n 40 2>&1
	fi
	echo "--- processes in oomdelayfs.service's cgroup"
	for _p in $(cat "$CGROOT/system.slice/oomdelayfs.service/cgroup.procs" 2>/dev/null); do
		echo "  $_p $(cat "/proc/$_p/comm" 2>/dev/null) state $(awk '/^State/{print $2}' "/proc/$_p/status" 2>/dev/null) wchan $(cat "/proc/$_p/wchan" 2>/dev/null)"
	done
	echo "--- fuse mounts"
	awk '$3 ~ /^fuse/' /proc/mounts
	echo "--- failed units"
	systemctl --failed --no-legend --no-pager 2>&1
	echo "--- kernel log (last 25 lines)"
	dmesg | tail -n 25
}

# --- time and waiting
# now_ms: milliseconds on CLOCK_MONOTONIC
now_ms() { odt now; }
# fast_ms: sets FAST_MS to the uptime in milliseconds (10 ms steps) with the shell's read
# builtin, without a fork: a fork and exec costs tens of ms of the guest's CPU under TCG
# (`odt now` about 50 ms in the busybox VM, 6.1, 2026-12-06), and wait_for's loop called
# now_ms (odt and cut: two) at every step. For the loop's time-out only.
fast_ms() {
	read -r _fm_up _fm_x </proc/uptime
	FAST_MS=$((${_fm_up%.*} * 1000 + 1${_fm_up#*.}0 - 1000))
}
# wait_for TIMEOUT_MS CMD...: run CMD every 20 ms until it succeeds; false on time-out.
# Sets WAITED_MS to the time it took (CLOCK_MONOTONIC at both ends).
wait_for() { _wait_every 0.02 "$@"; }
# wait_slow TIMEOUT_MS CMD...: the same every 250 ms, for a CMD that costs the guest a
# second of CPU (an engine's CLI, journalctl piped to jq: 331 ms with 6 journal lines on 7)
# and whose moment is not a figure: run every 20 ms it kept a vCPU busy for the whole wait.
wait_slow() { _wait_every 0.25 "$@"; }
_wait_every() {
	_ws=$1 _to=$2
	shift 2
	_t0=$(now_ms)
	fast_ms
	_wf0=$FAST_MS
	while :; do
		if "$@"; then
			WAITED_MS=$(($(now_ms) - _t0))
			return 0
		fi
		fast_ms
		WAITED_MS=$((FAST_MS - _wf0))
		[ "$WAITED_MS" -lt "$_to" ] || return 1
		sleep "$_ws"
	done
}
alive() { # alive PID: exists and is not a zombie
	[ -d "/proc/$1" ] || return 1
	! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null
}
dead() { ! alive "$1"; }
mounted() { awk -v m="$1" '$2 == m {f = 1} END {exit !f}' /proc/mounts; } # mounted DIR
fuse_mounted() { awk -v m="$1" '$2 == m && $3 ~ /^fuse/ {f = 1} END {exit !f}' /proc/mounts; }

# --- cgroup files
evkey() { odt key "$1/memory.events" "$2"; } # evkey CG KEY: a memory.events counter
current() { cat "$1/memory.current"; }
mib() { awk -v b="$1" 'BEGIN{printf "%.1f", b / 1048576}'; }
# shadow_of CG: the shadow path of a real cgroup directory (the daemon serves /sys/fs/cgroup)
shadow_of() { echo "$SHADOW${1#"$CGROOT"}"; }

# --- the package, the way docs/OPERATIONS.md installs it
# sd_deb: the payload's package
sd_deb() {
	_d=$(ls "$PAYLOAD"/deb/oomdelayfs_*.deb 2>/dev/null | head -n 1)
	[ -n "$_d" ] || fail "no oomdelayfs_*.deb on the payload"
	echo "$_d"
}
# sd_install: dpkg -i the package (with SD_INSTALL_WITH=apt: `apt install -y ./oomdelayfs_*.deb`;
# the VM has no network: the dependencies apt would fetch are in the image), then `systemctl enable --now
# oomdelayfs`; waits (30 s) for the unit to be active, which with Type=notify means ready.
# Sets INSTALL_MS (dpkg -i) and READY_MS (enable --now until active).
sd_install() {
	log "sd_install: dpkg -i, systemctl enable --now oomdelayfs"
	_t0=$(now_ms)
	if [ "${SD_INSTALL_WITH:-dpkg}" = apt ]; then
		# docs/CONTAINERS.md's way: apt resolves the Depends from what is installed (the image
		# has them: no network), then runs dpkg
		(cd "$(dirname "$(sd_deb)")" && apt install -y "./$(basename "$(sd_deb)")") >/run/oomd-sd/dpkg-i.log 2>&1 ||
			{ cat /run/oomd-sd/dpkg-i.log; fail "apt install ./$(basename "$(sd_deb)") failed"; }
	else
		dpkg -i "$(sd_deb)" >/run/oomd-sd/dpkg-i.log 2>&1 || { cat /run/oomd-sd/dpkg-i.log; fail "dpkg -i failed"; }
	fi
	_t1=$(now_ms)
	INSTALL_MS=$((_t1 - _t0))
	systemctl enable --now oomdelayfs >/run/oomd-sd/enable.log 2>&1 ||
		{ cat /run/oomd-sd/enable.log; fail "systemctl enable --now oomdelayfs failed"; }
	wait_for 30000 sd_active || fail "oomdelayfs.service not active 30 s after enable --now: $(systemctl is-active oomdelayfs)"
	READY_MS=$(($(now_ms) - _t1))
	fuse_mounted "$SHADOW" || fail "oomdelayfs.service is active but $SHADOW is not a FUSE mount"
}
sd_active() { [ "$(systemctl is-active oomdelayfs 2>/dev/null)" = active ]; }
sd_installed() { dpkg-query -W -f '${Status}' oomdelayfs 2>/dev/null | grep -q 'ok installed'; }
# sd_mainpid: the unit's main process (0 when none)
sd_mainpid() { systemctl show -p MainPID --value oomdelayfs; }
# sd_unit_procs: "pid comm state" of every process in the unit's cgroup, one a line
sd_unit_procs() {
	for _p in $(cat "$CGROOT/system.slice/oomdelayfs.service/cgroup.procs" 2>/dev/null); do
		echo "$_p $(cat "/proc/$_p/comm" 2>/dev/null) $(awk '/^State/{print $2}' "/proc/$_p/status" 2>/dev/null)"
	done
}

# --- the journal (docs/OPERATIONS.md: the records and their OOMD_* fields)
MSG_HOLD_START=4f8a1c2e9b3d47e6a0c5d2b8e1f7a903
MSG_HOLD_END=9d2e7b4c1a8f4e03b6c9d5a2e7f1b864
MSG_BROKEN=c3b1e8f2a7d94c60b5e2f9a1d8c7e346
# sd_journal [MATCH...]: oomdelayfs.service's records since the scenario began, as JSON, one a
# line (journalctl -o json; MATCH: FIELD=VALUE, every one must hold). The matches are applied by
# jq, not given to journalctl: systemd 252's journalctl returns nothing for --after-cursor with a
# field match whenever the cursor's own entry does not match (measured in the sd bed on 6.12:
# `--after-cursor=C -u oomdelayfs` 9 records, `--after-cursor=C -u oomdelayfs MESSAGE_ID=...` 0,
# `-u oomdelayfs MESSAGE_ID=...` without the cursor 1). Without a cursor the operator's own
# `journalctl -u oomdelayfs MESSAGE_ID=...` (docs/OPERATIONS.md) works and sd-install runs it.
sd_journal() {
	if [ -n "$OOMD_CURSOR" ]; then
		journalctl --no-pager -o json --after-cursor="$OOMD_CURSOR" -u oomdelayfs 2>/dev/null
	else
		journalctl --no-pager -o json -u oomdelayfs 2>/dev/null
	fi | jq -c '. as $e | select(all($ARGS.positional[] | capture("^(?<k>[^=]+)=(?<v>.*)$"); $e[.k] == .v))' --args "$@"
}
# sd_records MSGID [MATCH...]: one line per record of that MESSAGE_ID, "FIELD=value ..." of its
# CGROUP and OOMD_* fields (jq)
sd_records() {
	_m=$1
	shift
	sd_journal MESSAGE_ID="$_m" "$@" | jq -r '[to_entries[] | select(.key == "CGROUP" or (.key | startswith("OOMD_"))) | "\(.key)=\(.value)"] | join(" ")'
}
# sd_field LINE FIELD: a field's value in a line of sd_records
sd_field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1; }
# sd_wait_record TIMEOUT_MS MSGID [MATCH...]: wait until such a record is in the journal; prints it
_has_record() { [ -n "$(sd_records "$@" | head -n 1)" ]; }
sd_wait_record() {
	_to=$1
	shift
	wait_slow "$_to" _has_record "$@" || return 1
	sd_records "$@" | tail -n 1
}

# --- a cgroup tree the daemon serves, made the way systemd lets an operator have one:
# sd_cgtree NAME: a transient service oomdt-NAME (Delegate=yes: the subtree is the unit's, its
# memory controller enabled) whose one process (sleep) is moved to the leaf "keep"; prints the
# unit's cgroup directory, in which the scenario makes its cgroups with mkcg. The runner stops
# oomdt-* units after each scenario.
sd_cgtree() {
	_u=oomdt-$1
	systemd-run --unit="$_u" --quiet -p Delegate=yes -p TasksMax=infinity sleep infinity ||
		fail "systemd-run $_u failed"
	_cg=$CGROOT/system.slice/$_u.service
	wait_for 10000 _main_pid "$_u" || fail "$_u: no main process within 10 s"
	mkdir -p "$_cg/keep" || fail "mkdir $_cg/keep"
	echo "$(systemctl show -p MainPID --value "$_u")" >"$_cg/keep/cgroup.procs" ||
		fail "$_u: cannot move its process to keep"
	grep -qw memory "$_cg/cgroup.controllers" || fail "$_u: Delegate=yes gave no memory controller ($(cat "$_cg/cgroup.controllers"))"
	grep -qw memory "$_cg/cgroup.subtree_control" || echo +memory >"$_cg/cgroup.subtree_control" ||
		fail "cannot enable +memory in $_cg"
	echo "$_cg"
}
_main_pid() { [ "$(systemctl show -p MainPID --value "$1" 2>/dev/null)" -gt 0 ] 2>/dev/null; }
# mkcg PARENT NAME: make PARENT/NAME (memory enabled in PARENT); prints its path
mkcg() {
	grep -qw memory "$1/cgroup.subtree_control" || echo +memory >"$1/cgroup.subtree_control" ||
		fail "cannot enable +memory in $1"
	mkdir -p "$1/$2" || fail "mkdir $1/$2"
	echo "$1/$2"
}

# --- load
# start_hog CG MB [odt hog options]: a process in CG touching MB MiB; sets HOG_PID and HOG_REPORT
start_hog() {
	_hcg=$1 _mb=$2
	shift 2
	HOG_REPORT=/run/oomd-sd/hog.$$.$(basename "$_hcg")
	rm -f "$HOG_REPORT"
	odt hog "$_mb" --cgroup "$_hcg" --report "$HOG_REPORT" "$@" &
	HOG_PID=$!
}
hog_kb() { odt progress "$HOG_REPORT"; }

# --- holds (the daemon's persisted state: xattr trusted.oomdelayfs.state on the real cgroup,
# deadline=<ns> on CLOCK_BOOTTIME, = CLOCK_MONOTONIC in a VM that never suspends)
under_oom() { grep -q '^under_oom 1' "$1/memory.oom_control"; } # under_oom SHADOWCG
_deadline_of() { odt xattr get "$1" trusted.oomdelayfs.state 2>/dev/null | sed -n 's/.*deadline=\([0-9]*\).*/\1/p'; }
_has_deadline() { [ -n "$(_deadline_of "$1")" ]; }
# hold_deadline_ns CG: the deadline of CG's last hold, from the persisted state, or, once the
# hold has ended (a shell slowed down by a loaded host can miss a short hold's state: CI saw a
# 1,500 ms hold end before the shell read it), from the daemon's journal line for the hold
# ("CG: over its limit (L bytes): held, deadline=NS (boottime ns, ...)", daemon/ctl_act.c),
# which names the deadline itself. (The hold-started record's OOMD_DEADLINE_IN_MS counts from
# the moment the audit thread wrote it, up to 200 ms after the onset: e-podman read a deadline
# 243 ms too late from it and called a kill 98 ms after the real deadline early.)
# Empty when there is neither.
hold_deadline_ns() {
	_x=$(_deadline_of "$1")
	if [ -z "$_x" ]; then
		_x=$(sd_journal | jq -r '.MESSAGE | strings' | grep -F "$1: over its limit" |
			tail -n 1 | sed -n 's/.*deadline=\([0-9]*\).*/\1/p')
	fi
	echo "$_x"
}
_has_hold_deadline() { [ -n "$(hold_deadline_ns "$1")" ]; }
# deadline_ns CG: the hold's deadline (waits 5 s for the state or the journal's record)
deadline_ns() {
	wait_for 5000 _has_hold_deadline "$1" ||
		fail "no deadline persisted for $1 within 5 s (memory.events: $(tr '\n' ' ' <"$1/memory.events")," \
			"hog ${HOG_PID:-none} $(alive "${HOG_PID:-0}" && echo alive || echo dead); the journal's records:" \
			"$(sd_records "$MSG_HOLD_START" CGROUP="$1" | tr '\n' ';') / $(sd_records "$MSG_HOLD_END" CGROUP="$1" | tr '\n' ';'))"
	hold_deadline_ns "$1"
}
# held_until DEADLINE_MS CG K0 PID...: until DEADLINE_MS (CLOCK_MONOTONIC ms), fail if CG's
# oom_kill leaves K0 or a PID dies (the clock is read after the checks: a slow shell never
# blames the daemon for a kill that came after the deadline). The clock is fast_ms's (10 ms
# steps), set onto CLOCK_MONOTONIC once and read 20 ms ahead (the loop ends a little early,
# never late); more than 1 s before the deadline it looks every 200 ms (what comes between two
# looks is still seen before the deadline), in the last second every 20 ms: a look at every
# step for the whole hold (75 s in sd-watchdog) kept one vCPU busy under TCG.
held_until() {
	_dl=$1 _hcg=$2 _k0=$3
	shift 3
	_hoff=$(now_ms)
	fast_ms
	_hoff=$((_hoff - FAST_MS + 20))
	while :; do
		_k=$(evkey "$_hcg" oom_kill)
		_dead=''
		for _p in "$@"; do alive "$_p" || _dead=$_p; done
		fast_ms
		_t=$((FAST_MS + _hoff))
		[ "$_t" -lt "$_dl" ] || return 0
		[ "$_k" = "$_k0" ] || fail "real oom_kill of $_hcg moved $((_dl - _t)) ms before the deadline"
		[ -z "$_dead" ] || fail "pid $_dead died $((_dl - _t)) ms before the deadline"
		if [ $((_dl - _t)) -gt 1000 ]; then sleep 0.2; else sleep 0.02; fi
	done
}
# kill_watch CG: from now on a memory-locked inotify watcher (pressure killwatch) notes when CG's
# real oom_kill first moves; kill_late CG DEADLINE_NS then prints its lateness in ms (fails if
# it came before the deadline, or not within 10 s). The watcher gives up after 600 s: longer than
# any scenario's T (it gave up at 120 s in sd-watchdog with T = 150 s and the check read that as a kill)
kill_watch() {
	pressure killwatch "$1" 0 --timeout 600000 >"/run/oomd-sd/kw.$(basename "$1")" 2>&1 &
	KW_PID=$!
}
kill_late() {
	_kw=/run/oomd-sd/kw.$(basename "$1")
	wait_for 10000 test -s "$_kw" || fail "the kill watcher of $1 saw nothing within 10 s"
	head -n 1 "$_kw" | grep -q '^-\{0,1\}[0-9]' || fail "the kill watcher of $1 saw no kill: $(cat "$_kw")"
	_kl=$(awk -v d="$2" '{ printf "%.1f", $4 - d / 1e6 }' "$_kw")
	awk -v l="$_kl" 'BEGIN { exit !(l >= 0) }' || fail "the kernel's oom_kill of $1 came $_kl ms from the deadline: BEFORE it (watcher: $(cat "$_kw"); deadline $2 ns; now boottime $(pressure now) ms, monotonic $(odt now) ms)"
	echo "$_kl"
}

# --- readers across a restart
# reader_start FILE RUN_MS [THREADS]: inflight (tests/vm/progs/inflight.c) opens, reads and
# closes FILE in a loop for RUN_MS in THREADS threads (default 1), then waits up to 5 s for
# operations still under way. Sets READER_PID and READER_OUT.
reader_start() {
	READER_OUT=/run/oomd-sd/reader.$$.$(date +%s%N)
	inflight "$1" "${3:-1}" "$2" 5000 >"$READER_OUT" 2>&1 &
	READER_PID=$!
}
# reader_result: wait for the reader; prints its line "ops=N ok=N failed=N hung=N slowest_ms=X
# last_failed_start=T errors=..." (slowest_ms: the longest single operation, i.e. the longest a
# reader waited for an answer, the reader's longest gap)
reader_result() {
	wait "$READER_PID" 2>/dev/null
	cat "$READER_OUT"
}
# reader_field NAME: a figure of the reader's line (after reader_result)
reader_field() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" "$READER_OUT" | head -n 1; }

# --- engines: the busybox image of the payload in each engine's store
# sd_image_docker | sd_image_podman | sd_image_ctr [NAMESPACE]: load $SD_IMAGE (no registry)
sd_image_docker() { docker load -i "$PAYLOAD/images/busybox.tar" >/dev/null || fail "docker load failed"; }
sd_image_podman() { podman load -i "$PAYLOAD/images/busybox.tar" >/dev/null || fail "podman load failed"; }
sd_image_ctr() {
	ctr -n "${1:-default}" images import --all-platforms "$PAYLOAD/images/busybox.tar" >/dev/null ||
		fail "ctr images import failed"
}

# --- CPUs (the runner's business; see the initramfs's init in build-image.sh)
cpus_up() {
	for _c in /sys/devices/system/cpu/cpu[1-9]*/online; do
		[ "$(cat "$_c" 2>/dev/null)" = 0 ] && { echo 1 >"$_c" || echo "cannot bring ${_c%/online} online"; }
	done
	return 0
}

# --- the daemon replaced while it works (sd-crash, sd-watchdog, sd-restart, sd-upgrade): a hold
# and readers across the replacement, then what issue 19 asks of it
# sd_hold_setup NAME T_MS: cgroup h (in a Delegate=yes unit) with L = 32M and T_MS written through
# the shadow, the kill watcher on, a hog of 200 MiB held in it and frozen (past L + the freeze
# margin: it cannot reach the ceiling while no server runs). Sets HCG, HOLD_K0 (oom_kill before),
# HOLD_DL (the persisted deadline, ns) and MOUNT_ID (the shadow's mount: id and device).
sd_hold_setup() {
	_top=$(sd_cgtree "$1")
	[ -d "$_top/keep" ] || fail "no cgroup tree for $1: $_top"
	HCG=$(mkcg "$_top" h)
	[ -d "$HCG" ] || fail "no cgroup h: $HCG"
	echo $((32 * MiB)) >"$(shadow_of "$HCG")/memory.max" || fail "cannot write memory.max through the shadow"
	echo "$2" >"$(shadow_of "$HCG")/memory.oom_delay_millisecs" || fail "cannot write T through the shadow"
	HOLD_K0=$(evkey "$HCG" oom_kill)
	kill_watch "$HCG"
	start_hog "$HCG" 200
	wait_for 30000 under_oom "$(shadow_of "$HCG")" || fail "no hold within 30 s"
	HOLD_DL=$(deadline_ns "$HCG")
	wait_for 10000 grep -q '^frozen 1' "$HCG/cgroup.events" || fail "the held hog not frozen within 10 s"
	MOUNT_ID=$(sd_mount_id)
}
# sd_arm NAME T_MS READ_MS: the package installed and running, sd_hold_setup NAME T_MS, two
# readers reading h's memory.oom_control through the shadow for READ_MS, 2 s of them before the
# event. Sets OLDPID (the daemon to be replaced) and NR0 (NRestarts before).
sd_arm() {
	sd_install
	sd_hold_setup "$1" "$2"
	reader_start "$(shadow_of "$HCG")/memory.oom_control" "$3" 2
	sleep 2
	OLDPID=$(sd_mainpid)
	NR0=$(systemctl show -p NRestarts --value oomdelayfs)
	sd_time_left 25000
}
# sd_time_left MIN_MS: fails unless the hold has MIN_MS left before its deadline: a set-up slowed
# down by the host must not let the hold end before the event it is there to outlast (T is chosen
# for a host running two VMs; the failure names what the set-up took)
sd_time_left() {
	_left=$((HOLD_DL / 1000000 - $(now_ms)))
	[ "$_left" -ge "$1" ] || fail "the set-up left the hold $_left ms before its deadline, under the $1 ms the event needs (a slow host: raise T)"
}
# sd_mount_id: "id major:minor" of the shadow's mount (the same mount, not a new one, after a restart)
sd_mount_id() { awk -v m="$SHADOW" '$5 == m { print $1, $3 }' /proc/self/mountinfo | tail -n 1; }
# sd_served_new OLDPID: true once the unit is active with another main process that answers a read
# through the shadow; sets NEWPID. (With Type=notify, active means READY=1: serving.)
sd_served_new() {
	_np=$(sd_mainpid)
	[ "$_np" != 0 ] && [ "$_np" != "$1" ] && sd_active &&
		timeout -s KILL 2 cat "$(shadow_of "$HCG")/memory.oom_control" >/dev/null 2>&1 || return 1
	NEWPID=$_np
}
# sd_wait_served OLDPID T0_MS WHAT: waits (60 s) for sd_served_new; sets SERVED_AT (ms: when the
# new server logged "serving", from the journal, so the poll's own pace does not count) and
# SERVED_MS (from T0_MS); fails unless the same mount is served
sd_wait_served() {
	wait_for 60000 sd_served_new "$1" ||
		fail "$3: no new server within 60 s (main $(sd_mainpid), $(systemctl is-active oomdelayfs))"
	SERVED_AT=$(sd_journal_at_ms '^serving .* on ')
	[ -n "$SERVED_AT" ] && [ "$SERVED_AT" -gt "$2" ] || fail "$3: no 'serving' line of the new server in the journal"
	SERVED_MS=$((SERVED_AT - $2))
	[ "$(sd_mount_id)" = "$MOUNT_ID" ] || fail "$3: the shadow is another mount now: $MOUNT_ID -> $(sd_mount_id)"
}
# sd_reader_check SERVED_AT: the reader ended, none hung, none begun after SERVED_AT failed;
# sets GAP_MS (its longest single read) and RFAILED (reads failed, all begun before SERVED_AT)
sd_reader_check() {
	reader_result >/dev/null
	[ "$(reader_field hung)" = 0 ] || fail "hung reads: $(cat "$READER_OUT")"
	_lfs=$(reader_field last_failed_start)
	[ "${_lfs:-0}" -lt "$1" ] || fail "a read begun $((_lfs - $1)) ms after the new server served failed: $(cat "$READER_OUT")"
	GAP_MS=$(reader_field slowest_ms)
	RFAILED="$(reader_field failed) $(reader_field errors)"
}
# sd_hold_check: the persisted deadline unchanged, h held until it, the kernel's kill within 1 s
# after it; sets KILL_LATE (ms)
sd_hold_check() {
	_dl2=$(deadline_ns "$HCG")
	[ "$_dl2" = "$HOLD_DL" ] || fail "the deadline moved: $HOLD_DL -> $_dl2"
	held_until $((HOLD_DL / 1000000)) "$HCG" "$HOLD_K0" "$HOG_PID"
	KILL_LATE=$(kill_late "$HCG" "$HOLD_DL")
	awk -v l="$KILL_LATE" 'BEGIN { exit !(l < 1000) }' || fail "the kill came $KILL_LATE ms after the deadline"
}
# sd_check_clean PID: the unit's cgroup holds PID and its charge zygote alone (fs/zygote.h:
# the child PID forks at start, named oomd-charge; a previous daemon's would have another
# parent), and systemd logged nothing about left-over processes, unclean terminations or
# time-outs since the scenario began (but the watchdog's own: "State 'stop-watchdog' timed
# out", its SIGKILL of a daemon that cannot dump)
sd_check_clean() {
	_procs=$(sd_unit_procs)
	_others=$(echo "$_procs" | while read -r _p _c _s; do
		[ "$_p" = "$1" ] && continue
		[ "$_c" = oomd-charge ] && [ "$(awk '/^PPid/{print $2}' "/proc/$_p/status" 2>/dev/null)" = "$1" ] && continue
		echo "$_p"
	done)
	echo "$_procs" | awk -v m="$1" '$1 == m { f = 1 } END { exit !f }' && [ -z "$_others" ] ||
		fail "the unit's cgroup holds: $(echo "$_procs" | tr '\n' ';') (main pid $1)"
	if [ -n "$OOMD_CURSOR" ]; then
		_j=$(journalctl --no-pager --after-cursor="$OOMD_CURSOR" -u oomdelayfs 2>/dev/null)
	else
		_j=$(journalctl --no-pager -u oomdelayfs 2>/dev/null)
	fi
	_bad=$(echo "$_j" | grep -iE "unclean termination|left-over process|timed out|result 'timeout'" |
		grep -v "State 'stop-watchdog' timed out" | head -n 3)
	[ -z "$_bad" ] || fail "the journal: $_bad"
}
# sd_journal_at_ms PATTERN: CLOCK_MONOTONIC ms of the unit's last journal line since the scenario
# began whose MESSAGE matches PATTERN (grep -E), empty if none
sd_journal_at_ms() {
	sd_journal | jq -r --arg p "$1" 'select(.MESSAGE | type == "string" and test($p)) | .__MONOTONIC_TIMESTAMP' |
		tail -n 1 | awk '$1 { printf "%d", $1 / 1000 }'
}
sd_show() { systemctl show -p NRestarts -p Result oomdelayfs | tr '\n' ' ' | sed 's/ $//'; }
# sd_leave_clean: purge the package (what sd-remove checks in detail), so that a scenario after
# this one in the same boot finds the system as the image has it (sd-install wants no package)
sd_leave_clean() {
	dpkg --purge oomdelayfs >/run/oomd-sd/dpkg-purge-end.log 2>&1 ||
		{ cat /run/oomd-sd/dpkg-purge-end.log; fail "dpkg --purge at the end failed"; }
	[ ! -e /run/oomdelayfs ] || fail "/run/oomdelayfs left after the purge: $(ls -la /run/oomdelayfs)"
}

# --- engines (the e-* scenarios, docs/CONTAINERS.md). A scenario defines, for its engine:
#   eng_run NAME ASK      a detached container NAME of $SD_IMAGE running $E_PROG with --memory
#                         $E_L, asking ASK the engine's way: disable | delay | none
#   eng_pid NAME          its first process's host pid
#   eng_exec NAME CMD...  CMD in the container
#   eng_update NAME BYTES its memory limit raised the engine's way
#   eng_logs NAME         its output
#   eng_rm NAME           gone
# and calls e_body; e_body leaves its figures in E_FIGURES.
E_L=$((64 * MiB)) E_T=2000 E_UP=$((256 * MiB))
# waits for /tmp/go, then takes 96 MiB in one process (busybox dd's 96 MiB buffer, filled by
# one read of /dev/zero page after page, which memory.high throttles as it would a program's
# page faults), prints dd's status (0: it got the memory; 137: the kernel killed it) and stays.
# Not `head | tail`, as before: head goes on charging pipe buffers while tail's pages are
# freed, and the kernel's own charge path then kills the next task too, with or without the
# daemon (r-one-kill: native v2 on 7 lost a bystander in 4 of 6 rounds); here the next task is
# the container's PID 1.
E_PROG='while [ ! -e /tmp/go ]; do sleep 0.1; done; dd if=/dev/zero of=/dev/null bs=96M count=1 2>/dev/null; echo "rc=$?"; sleep 3600'
# e_cg NAME: the container's cgroup directory on the host, from its first process (an engine's
# inspect can answer nothing for a moment under TCG load: e-docker once got B's cgroup as the
# root's that way; asked again for 30 s, then a failure that says so)
_e_pid_ok() { _ep=$(eng_pid "$1" 2>/dev/null); [ -n "$_ep" ] && [ "$_ep" -gt 0 ] 2>/dev/null && [ -r "/proc/$_ep/cgroup" ]; }
e_cg() {
	wait_for 30000 _e_pid_ok "$1" || fail "$1: its engine names no running first process (pid '$(eng_pid "$1" 2>&1)')"
	_ec=$(sed -n 's/^0:://p' "/proc/$_ep/cgroup")
	[ -n "$_ec" ] && [ "$_ec" != / ] || fail "$1: its first process $_ep is in cgroup '$_ec'"
	echo "$CGROOT$_ec"
}
_e_said() { eng_logs "$1" 2>/dev/null | grep -q "^$2\$"; }
_not_held() { ! under_oom "$1"; }
# e_look NAME: what the container sees, in one exec (each exec costs an engine 5-9 s under TCG):
# lines "type <magic of /sys/fs/cgroup>", "dir <its cgroup directory>", then "T <delay>",
# "max <memory.max>" and its memory.oom_control's lines prefixed "oc ", where those files exist
E_LOOK='echo "type $(stat -f -c %t /sys/fs/cgroup)"; d=/sys/fs/cgroup$(sed -n "s/^0:://p" /proc/self/cgroup); d=${d%/}; echo "dir $d"; [ -e "$d/memory.oom_delay_millisecs" ] && echo "T $(cat "$d/memory.oom_delay_millisecs")"; [ -e "$d/memory.oom_control" ] && sed "s/^/oc /" "$d/memory.oom_control"; echo "max $(cat "$d/memory.max" 2>&1)"'
e_look() { eng_exec "$1" sh -c "$E_LOOK"; }
_e_key() { echo "$1" | sed -n "s/^$2 //p" | head -n 1; } # _e_key LOOK KEY
# e_view NAME T DISABLE: inside, /sys/fs/cgroup is the shadow (FUSE) with the container's L,
# its delay and its kill-disable, in its own directory: /sys/fs/cgroup with a cgroup namespace,
# /sys/fs/cgroup/<its path> without one (ctr's containers: the shadow of the whole tree)
e_view() {
	_l=$(e_look "$1") || fail "$1: looking inside failed: $_l"
	_d=$(_e_key "$_l" dir)
	[ "$(_e_key "$_l" type)" = 65735546 ] || fail "$1: /sys/fs/cgroup inside is of type 0x$(_e_key "$_l" type), not FUSE (the shadow)"
	[ "$(_e_key "$_l" T)" = "$2" ] || fail "$1: $_d/memory.oom_delay_millisecs reads '$(_e_key "$_l" T)' inside, not $2"
	[ "$(_e_key "$_l" oc | head -n 1)" = "oom_kill_disable $3" ] || fail "$1: $_d/memory.oom_control inside: $(echo "$_l" | grep '^oc ' | tr '\n' ' ')"
	[ "$(_e_key "$_l" max)" = "$E_L" ] || fail "$1: $_d/memory.max reads '$(_e_key "$_l" max)' inside, not L = $E_L"
}
# e_plain NAME: a container that asked for nothing keeps what its engine gives it (E_PLAIN_TYPE: the
# magic of its /sys/fs/cgroup, default cgroup2's; ctr's default spec gives sysfs's) and sees no v1 file
e_plain() {
	_l=$(e_look "$1") || fail "$1: looking inside failed: $_l"
	[ "$(_e_key "$_l" type)" = "${E_PLAIN_TYPE:-63677270}" ] || fail "$1 asked for nothing but its /sys/fs/cgroup is of type 0x$(_e_key "$_l" type), not 0x${E_PLAIN_TYPE:-63677270} (the engine's own)"
	[ -z "$(_e_key "$_l" oc)" ] || fail "$1 asked for nothing but sees memory.oom_control"
	return 0
}
# e_body: oomd-a (A) asks for the kill-disable, B for the delay E_T, C for nothing
e_body() {
	sd_installed || sd_install
	sd_active || systemctl start oomdelayfs || fail "oomdelayfs does not start"
	for c in oomd-a oomd-b oomd-c; do eng_rm "$c" >/dev/null 2>&1; done
	log "e_body: starting A (disable), B (delay $E_T ms), C (nothing)"
	eng_run oomd-a disable || fail "the container asking for oom_kill_disable did not start"
	eng_run oomd-b delay || fail "the container asking for a delay did not start"
	eng_run oomd-c none || fail "the container asking for nothing did not start"
	log "e_body: containers started; checking their views"
	e_view oomd-a 0 1
	e_view oomd-b "$E_T" 0
	e_plain oomd-c
	log "e_body: systemctl restart oomdelayfs"
	# the view is kept across a restart (the FUSE connection stays in the fd store)
	_t0=$(now_ms)
	systemctl restart oomdelayfs || fail "systemctl restart oomdelayfs failed"
	E_RESTART_MS=$(($(now_ms) - _t0))
	e_view oomd-a 0 1
	e_view oomd-b "$E_T" 0

	# A: held at L until the limit is raised, then it gets its memory
	cga=$(e_cg oomd-a) pa=$(eng_pid oomd-a)
	sa=$(shadow_of "$cga")
	k0=$(evkey "$cga" oom_kill)
	log "e_body: A takes memory"
	eng_exec oomd-a touch /tmp/go
	wait_for 90000 under_oom "$sa" || fail "A not held within 90 s (usage $(current "$cga"), real max $(cat "$cga/memory.max"))"
	held_until $(($(now_ms) + 3000)) "$cga" "$k0" "$pa"
	_use=$(current "$cga")
	_t0=$(now_ms)
	eng_update oomd-a "$E_UP" || fail "raising A's limit failed"
	# released: the hold ends when the raise is seen; then the program gets its memory and says
	# so (its last MiB under TCG, and each `logs` of an engine, take seconds on a loaded host)
	wait_for 10000 _not_held "$sa" || fail "A's hold did not end within 10 s of the update ($(cat "$sa/memory.oom_control" | tr '\n' ' '))"
	E_RELEASE_MS=$(($(now_ms) - _t0))
	wait_slow 60000 _e_said oomd-a rc=0 || fail "A's program did not finish within 60 s of the update (logs: $(eng_logs oomd-a 2>&1 | tail -n 2 | tr '\n' ' '))"
	[ "$(evkey "$cga" oom_kill)" = "$k0" ] || fail "A's oom_kill moved"
	alive "$pa" || fail "A's first process died"

	# B: held until the delay is over, then the kernel kills the hog
	cgb=$(e_cg oomd-b) pb=$(eng_pid oomd-b)
	sb=$(shadow_of "$cgb")
	k0=$(evkey "$cgb" oom_kill)
	kill_watch "$cgb"
	log "e_body: A released in $E_RELEASE_MS ms; B takes memory"
	eng_exec oomd-b touch /tmp/go
	wait_for 90000 under_oom "$sb" || fail "B not held within 90 s (usage $(current "$cgb"))"
	dlns=$(deadline_ns "$cgb")
	held_until $((dlns / 1000000)) "$cgb" "$k0" "$pb"
	wait_slow 30000 _e_said oomd-b rc=137 || fail "B's hog not killed within 30 s of the deadline (logs: $(eng_logs oomd-b 2>&1 | tail -n 2 | tr '\n' ' '))"
	E_KILL_LATE=$(kill_late "$cgb" "$dlns")
	awk -v l="$E_KILL_LATE" 'BEGIN { exit !(l < 1000) }' || fail "B's kill came $E_KILL_LATE ms after the deadline"
	for c in oomd-a oomd-b oomd-c; do eng_rm "$c" >/dev/null 2>&1; done
	E_FIGURES="restart ${E_RESTART_MS} ms with the view kept; A held at $(mib "$_use") MiB for 3 s, hold ended ${E_RELEASE_MS} ms after the update; B killed ${E_KILL_LATE} ms after its ${E_T} ms deadline"
}
