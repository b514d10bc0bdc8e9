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
# now_ms: milliseconds on CLOCK_MONOTONIC (with microsecond decimals)
now_ms() { odt now | cut -d. -f1; }
# wait_for TIMEOUT_MS CMD...: run CMD every 20 ms until it succeeds; false on time-out.
# Sets WAITED_MS to the time it took.
wait_for() {
	_to=$1
	shift
	_t0=$(now_ms)
	while :; do
		if "$@"; then
			WAITED_MS=$(($(now_ms) - _t0))
			return 0
		fi
		WAITED_MS=$(($(now_ms) - _t0))
		[ "$WAITED_MS" -lt "$_to" ] || return 1
		sleep 0.02
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
# sd_install: dpkg -i the package (the VM has no network: its dependencies are in the image,
# which is what `apt install ./oomdelayfs_*.deb` would fetch), then `systemctl enable --now
# oomdelayfs`; waits (30 s) for the unit to be active, which with Type=notify means ready.
# Sets INSTALL_MS (dpkg -i) and READY_MS (enable --now until active).
sd_install() {
	_t0=$(now_ms)
	dpkg -i "$(sd_deb)" >/run/oomd-sd/dpkg-i.log 2>&1 || { cat /run/oomd-sd/dpkg-i.log; fail "dpkg -i failed"; }
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
# line (journalctl -o json; MATCH: FIELD=VALUE as journalctl takes them)
sd_journal() {
	if [ -n "$OOMD_CURSOR" ]; then
		journalctl --no-pager -o json --after-cursor="$OOMD_CURSOR" -u oomdelayfs "$@" 2>/dev/null
	else
		journalctl --no-pager -o json -u oomdelayfs "$@" 2>/dev/null
	fi
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
	wait_for "$_to" _has_record "$@" || return 1
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
# 1,500 ms hold end before the shell read it), from the journal's hold-started record: its
# monotonic timestamp plus OOMD_DEADLINE_IN_MS (CLOCK_BOOTTIME = CLOCK_MONOTONIC in the VM,
# which never suspends). Empty when there is neither.
hold_deadline_ns() {
	_x=$(_deadline_of "$1")
	if [ -z "$_x" ]; then
		_x=$(sd_journal MESSAGE_ID="$MSG_HOLD_START" CGROUP="$1" |
			jq -r '(.__MONOTONIC_TIMESTAMP | tonumber) * 1000 + (.OOMD_DEADLINE_IN_MS | tonumber) * 1000000 | floor' 2>/dev/null | tail -n 1)
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
# blames the daemon for a kill that came after the deadline)
held_until() {
	_dl=$1 _hcg=$2 _k0=$3
	shift 3
	while :; do
		_k=$(evkey "$_hcg" oom_kill)
		_dead=''
		for _p in "$@"; do alive "$_p" || _dead=$_p; done
		_t=$(now_ms)
		[ "$_t" -lt "$_dl" ] || return 0
		[ "$_k" = "$_k0" ] || fail "real oom_kill of $_hcg moved $((_dl - _t)) ms before the deadline"
		[ -z "$_dead" ] || fail "pid $_dead died $((_dl - _t)) ms before the deadline"
		sleep 0.02
	done
}
# kill_watch CG: from now on a memory-locked inotify watcher (pressure killwatch) notes when CG's
# real oom_kill first moves; kill_late CG DEADLINE_NS then prints its lateness in ms (fails if
# it came before the deadline, or not within 10 s)
kill_watch() {
	pressure killwatch "$1" 0 --timeout 120000 >"/run/oomd-sd/kw.$(basename "$1")" 2>&1 &
	KW_PID=$!
}
kill_late() {
	_kw=/run/oomd-sd/kw.$(basename "$1")
	wait_for 10000 test -s "$_kw" || fail "the kill watcher of $1 saw nothing within 10 s"
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
