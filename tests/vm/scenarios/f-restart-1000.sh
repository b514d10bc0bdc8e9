# f-restart-1000 (issue 5, deliverable 3): 1,000 managed cgroups (L = 16 MiB each, T = 5 s set
# once on their parent through the shadow tree), the daemon SIGKILLed; while it is dead the
# real memory.high of every cgroup is reset to "max" (as if the daemon had died between a
# persist and its knob write). Restarted, it must adopt all 1,000: read each persisted state
# and re-apply the real knobs (memory.high = L, memory.max = L + ceiling), T still 5000.
# Figures: the daemon's own scan+adopt time, time from exec to the shadow served.
# timeout: 300
. /oomd/lib.sh
command -v pressure >/dev/null || skip "tests/vm/progs/pressure is not built"
N=1000
L=$((16 * MiB))
start_daemon /shadow
p=$(mkcg m); sp=/shadow${p#$CGROOT}
setknob "$p" cgroup.subtree_control +memory
cd "$p" || fail "cd $p"
# shellcheck disable=SC2046
mkdir $(seq 1 $N | sed 's/^/c/') || fail "mkdir of $N cgroups"
cd / || fail "cd /"
t0=$(now_ms)
for i in $(seq 1 $N); do
	echo "$L" >"$sp/c$i/memory.max" || fail "shadow memory.max of c$i"
done
echo 5000 >"$sp/memory.oom_delay_millisecs" || fail "T on the parent"
tset=$(($(now_ms) - t0))
# every one managed: state persisted, real knobs held (the FUSE write returns after them)
miss=0
for i in $(seq 1 $N); do
	read -r h <"$p/c$i/memory.high"
	[ "$h" = "$L" ] || miss=$((miss + 1))
done
[ "$miss" = 0 ] || fail "$miss of $N cgroups without real memory.high = L before the restart"
odt xattr get "$p/c$N" trusted.oomdelayfs.state | grep -q 'delay=5000' || fail "c$N: no persisted T"
kill -KILL "$DAEMON_PID"
wait_for 5000 dead "$DAEMON_PID" || fail "daemon alive after SIGKILL"
wait "$DAEMON_PID" 2>/dev/null
for i in $(seq 1 $N); do
	echo max >"$p/c$i/memory.high" || fail "reset memory.high of c$i"
done
n0=$(grep -c 'serving ' /tmp/oomdelayfs.log)
t0=$(pressure now)
# shellcheck disable=SC2086
/bin/oomdelayfs $OOMD_DAEMON_ARGS "$SHADOW" >>/tmp/oomdelayfs.log 2>&1 &
DAEMON_PID=$!
wait_for 60000 _served "$n0" || fail "the restarted daemon did not serve within 60 s"
served=$(awk -v a="$(pressure now)" -v b="$t0" 'BEGIN { printf "%.0f", a - b }')
scan=$(sed -n 's/.* \([0-9]*\) cgroups found in \([0-9.]*\) ms.*/\1 \2/p' /tmp/oomdelayfs.log | tail -n 1)
# the walk's summary counts the cgroups that took their persisted state (one line each only
# for a resumed hold: none here)
adopted=$(sed -n 's/.* cgroups found in .*(\([0-9]*\) took their persisted state).*/\1/p' /tmp/oomdelayfs.log | tail -n 1)
bad=0
for i in $(seq 1 $N); do
	read -r h <"$p/c$i/memory.high"
	read -r m <"$p/c$i/memory.max"
	[ "$h" = "$L" ] && [ "$m" = $((L + 64 * MiB)) ] || bad=$((bad + 1))
done
[ "$bad" = 0 ] || fail "$bad of $N cgroups without their real knobs re-applied after the restart"
for i in 1 500 $N; do
	[ "$(cat "$sp/c$i/memory.oom_delay_millisecs")" = 5000 ] || fail "c$i: T reads $(cat "$sp/c$i/memory.oom_delay_millisecs") after the restart"
	[ "$(cat "$sp/c$i/memory.max")" = "$L" ] || fail "c$i: shadow memory.max $(cat "$sp/c$i/memory.max") after the restart"
done
[ "${adopted:-0}" -ge "$N" ] || fail "only ${adopted:-0} cgroups counted as adopted with their persisted state"
stop_daemon
pass "$N managed cgroups (set up in $tset ms): restart adopted them all (persisted state read, memory.high" \
	"re-applied on all $N) — daemon scan+adopt of ${scan% *} cgroups in ${scan#* } ms; exec to shadow served $served ms"
