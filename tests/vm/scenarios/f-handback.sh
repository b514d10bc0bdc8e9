# f-handback (issue 5, deliverables 4 and 5): SIGTERM hands every managed cgroup back to the
# kernel: real memory.max = L, real memory.high = the user's, thawed, the state xattr removed,
# the shadow unmounted; after that the kernel alone kills at L at once. Then the same after a
# SIGKILL of the daemon, by `oomdelayfs --release-all`.
# Cgroups: i (T = 30 s, idle), h (T = 60 s, held, frozen with --freeze-margin 1M),
# d (oom_kill_disable 1, held). Figures: stop time, release-all time, kill times at L after.
# timeout: 150
. /oomd/lib.sh
uoom() { grep -q '^under_oom 1' "$1/memory.oom_control"; }
thawed() { grep -q '^frozen 0' "$1/cgroup.events"; }
L=$((32 * MiB)) H=$((48 * MiB))
PFX=""
setup() { # setup ROUND: the three cgroups, a hog held in h and d
	for n in i h d; do
		cg=$(mkcg "$1$n"); s=/shadow${cg#$CGROOT}
		setknob "$s" memory.max "$L"
		setknob "$s" memory.high "$H"
	done
	setknob "/shadow${OOMD_CG#$CGROOT}/$1i" memory.oom_delay_millisecs 30000
	setknob "/shadow${OOMD_CG#$CGROOT}/$1h" memory.oom_delay_millisecs 60000
	setknob "/shadow${OOMD_CG#$CGROOT}/$1d" memory.oom_control 1
	start_hog "$OOMD_CG/$1h" 200; HH=$HOG_PID
	start_hog "$OOMD_CG/$1d" 200; HD=$HOG_PID
	wait_for 30000 uoom "/shadow${OOMD_CG#$CGROOT}/$1h" || fail "$1h: no hold within 30 s"
	wait_for 30000 uoom "/shadow${OOMD_CG#$CGROOT}/$1d" || fail "$1d: no hold within 30 s"
	wait_for 8000 frozen "$OOMD_CG/$1h" || fail "$1h: not frozen within 8 s (freeze margin 1M)"
	for n in i h d; do
		odt xattr get "$OOMD_CG/$1$n" trusted.oomdelayfs.state >/dev/null 2>&1 || fail "$1$n: no persisted state while managed"
		[ "$(cat "$OOMD_CG/$1$n/memory.max")" = $((L + 64 * MiB)) ] || fail "$1$n: real memory.max $(cat "$OOMD_CG/$1$n/memory.max") while managed, not L + ceiling"
	done
}
check_back() { # check_back ROUND WHAT: every cgroup handed back; held hogs killed by the kernel at L
	for n in i h d; do
		cg=$OOMD_CG/$1$n
		[ "$(cat "$cg/memory.max")" = "$L" ] || fail "$2: $1$n real memory.max $(cat "$cg/memory.max"), not L"
		[ "$(cat "$cg/memory.high")" = "$H" ] || fail "$2: $1$n real memory.high $(cat "$cg/memory.high"), not the user's $H"
		wait_for 3000 thawed "$cg" || fail "$2: $1$n still frozen"
		if odt xattr get "$cg" trusted.oomdelayfs.state >/dev/null 2>&1; then
			fail "$2: $1$n state xattr still there: $(odt xattr get "$cg" trusted.oomdelayfs.state)"
		fi
	done
	wait_for 5000 dead "$HH" || fail "$2: the held hog of $1h survived the hand-back (usage $(current "$OOMD_CG/$1h"))"
	wait_for 5000 dead "$HD" || fail "$2: the held hog of $1d survived the hand-back"
	# the kernel alone: a new hog in i is killed at L at once (no delay any more)
	k0=$(evkey "$OOMD_CG/$1i" oom_kill)
	t0=$(now_ms)
	start_hog "$OOMD_CG/$1i" 200
	# T was 30 s: a kill within 10 s, however slow the VM, means no delay applied any more
	wait_for 10000 dead "$HOG_PID" || fail "$2: a hog in $1i (T was 30 s) not killed within 10 s of the hand-back (a delay still applied?)"
	KT=$(($(now_ms) - t0))
	[ "$(evkey "$OOMD_CG/$1i" oom_kill)" -gt "$k0" ] || fail "$2: hog in $1i died without an OOM kill"
}

# ---- SIGTERM ----
start_daemon /shadow --freeze-margin 1M
setup t
t0=$(now_ms)
kill -TERM "$DAEMON_PID"
wait_for 10000 dead "$DAEMON_PID" || fail "daemon alive 10 s after SIGTERM"
wait "$DAEMON_PID"; rc=$?
STOP=$(($(now_ms) - t0))
DAEMON_PID=''
[ "$rc" = 0 ] || fail "daemon exited with $rc after SIGTERM"
_mounted /shadow && fail "/shadow still mounted after SIGTERM"
check_back t SIGTERM
K1=$KT

# ---- SIGKILL, then --release-all ----
start_daemon /shadow --freeze-margin 1M
setup k
kill -KILL "$DAEMON_PID"
wait_for 5000 dead "$DAEMON_PID" || fail "daemon alive after SIGKILL"
wait "$DAEMON_PID" 2>/dev/null
DAEMON_PID=''
for n in i h d; do
	[ "$(cat "$OOMD_CG/k$n/memory.max")" = $((L + 64 * MiB)) ] || fail "k$n: real memory.max $(cat "$OOMD_CG/k$n/memory.max") after SIGKILL: not bounded by L + ceiling"
done
t0=$(now_ms)
/bin/oomdelayfs --release-all >>/tmp/oomdelayfs.log 2>&1; rc=$?
REL=$(($(now_ms) - t0))
[ "$rc" = 0 ] || fail "--release-all exited with $rc"
check_back k --release-all
K2=$KT
umount -l /shadow 2>/dev/null
pass "SIGTERM: stopped and unmounted in $STOP ms, 3 cgroups back (memory.max = L, user's high, thawed, no state)," \
	"held hogs killed by the kernel, a new hog killed at L after $K1 ms; SIGKILL + --release-all ($REL ms):" \
	"same, new hog killed after $K2 ms"
