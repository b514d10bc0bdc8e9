# l-cgtools (issue 4, deliverable 5): with the shadow tree mounted OVER /sys/fs/cgroup
# (oomdelayfs --cgroup-root /sys/fs/cgroup /sys/fs/cgroup), cgroup-tools (libcgroup) work
# unchanged: cgset -r memory.oom_delay_millisecs=500, cgset -r memory.oom_control=1,
# cgget -r memory.oom_control, cgcreate (the new group inherits T, rule 7), cgexec.
# The real tree is checked through a bind mount of the real cgroup2 mount on /tmp/realcg (a
# bind: a second `mount -t cgroup2` from the initial cgroup namespace re-applies its own
# options to the one hierarchy, and without nsdelegate it switched the boundary off for every
# later scenario (s-ctr saw the real tree let a container root out)).
# Figures: what cgget printed, the tools' run times.
# timeout: 90
. /oomd/lib.sh
command -v cgset >/dev/null && command -v cgget >/dev/null || skip "cgroup-tools not in the image"
REAL=/tmp/realcg
mkdir -p "$REAL"
mount --bind /sys/fs/cgroup "$REAL" || fail "cannot bind the real cgroup2 mount on $REAL"
cg=$(mkcg g)
G=${cg#$CGROOT/}
rcg=$REAL/$G
fusetop() { awk '$2 == "/sys/fs/cgroup" && $3 ~ /^fuse/ {f = 1} END {exit !f}' /proc/mounts; }
cleanup() { # never leave the FUSE mount over /sys/fs/cgroup (the runner cleans up through it)
	if [ -n "${DAEMON_PID:-}" ]; then
		SHADOW=/nonexistent # stop_daemon must not lazily unmount /sys/fs/cgroup: the real
		stop_daemon         # cgroup2 mount is there too
	fi
	fusetop && umount -l /sys/fs/cgroup
	umount "$REAL" 2>/dev/null
}
trap cleanup EXIT
start_daemon /sys/fs/cgroup --cgroup-root /sys/fs/cgroup
wait_for 10000 fusetop || fail "the shadow tree did not appear over /sys/fs/cgroup"
wait_for 5000 test -e "$cg/memory.oom_delay_millisecs" || fail "no memory.oom_delay_millisecs in $cg through the mount"
[ ! -e "$rcg/memory.oom_delay_millisecs" ] || fail "the real tree shows the synthetic file"
run() { # run CMD...: runs it, output in OUT, fails on error; adds its time to TOOLS
	_t0=$(now_ms)
	OUT=$("$@" 2>&1) || fail "'$*' failed: $OUT"
	TOOLS="$TOOLS $1 $(($(now_ms) - _t0))ms"
}
TOOLS=''
run cgset -r memory.max=$((32 * MiB)) "$G"
[ "$(cat "$cg/memory.max")" = $((32 * MiB)) ] || fail "shadow memory.max reads $(cat "$cg/memory.max") after cgset"
run cgset -r memory.oom_delay_millisecs=500 "$G"
[ "$(cat "$cg/memory.oom_delay_millisecs")" = 500 ] || fail "delay reads $(cat "$cg/memory.oom_delay_millisecs") after cgset"
[ "$(cat "$rcg/memory.high")" = $((32 * MiB)) ] || fail "real memory.high $(cat "$rcg/memory.high"), not L (managed after cgset)"
run cgset -r memory.oom_control=1 "$G"
grep -q '^oom_kill_disable 1' "$cg/memory.oom_control" || fail "oom_kill_disable not 1 after cgset: $(cat "$cg/memory.oom_control")"
run cgget -r memory.oom_control "$G"
echo "$OUT"
getout=$(echo "$OUT" | tr '\n' ' ' | tr -s ' \t' ' ')
echo "$OUT" | grep -q 'oom_kill_disable 1' || fail "cgget -r memory.oom_control: $OUT"
echo "$OUT" | grep -q 'under_oom 0' || fail "cgget -r memory.oom_control: $OUT"
run cgget -n -v -r memory.oom_delay_millisecs "$G"
[ "$OUT" = 500 ] || fail "cgget -n -v -r memory.oom_delay_millisecs: '$OUT'"
run cgset -r memory.oom_control=0 "$G"
grep -q '^oom_kill_disable 0' "$cg/memory.oom_control" || fail "oom_kill_disable not 0 after cgset =0"
# a bad value: cgset must fail (EINVAL from the file)
if bad=$(cgset -r memory.oom_control=2 "$G" 2>&1); then fail "cgset -r memory.oom_control=2 succeeded"; fi
# cgcreate below G: made through the mount, inherits T = 500 (rule 7)
setknob "$cg" cgroup.subtree_control +memory
run cgcreate -g "memory:$G/h"
[ -d "$rcg/h" ] || fail "cgcreate did not create $rcg/h in the real tree"
[ "$(cat "$cg/h/memory.oom_delay_millisecs")" = 500 ] || fail "cgcreated h has T $(cat "$cg/h/memory.oom_delay_millisecs"), not 500"
run cgexec -g "memory:$G/h" cat /proc/self/cgroup
[ "$OUT" = "0::/$G/h" ] || fail "cgexec ran in '$OUT', not /$G/h"
run cgget -r memory.oom_delay_millisecs -r memory.oom_control "$G/h"
getout2=$(echo "$OUT" | tr '\n' ' ' | tr -s ' \t' ' ')
rmdir "$cg/h" || fail "rmdir h through the mount"
cleanup
trap - EXIT
DAEMON_PID=''
fusetop && fail "the FUSE mount is still over /sys/fs/cgroup"
[ -d "$cg" ] || fail "the real $cg is not visible after unmounting"
pass "cgget -r memory.oom_control: '$getout'; cgget of h: '$getout2'; bad value refused: $(echo "$bad" | tail -n 1);" \
	"tool times:$TOOLS; daemon stop: $DAEMON_STOP"
