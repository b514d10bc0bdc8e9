# s-fdpin (issue 21, item 3): lookups cannot exhaust the daemon's descriptors, and names nobody
# uses any more give theirs back. With fs.nr_open at 4096 the daemon's RLIMIT_NOFILE is 4096:
# requests may use 3072 descriptors, one uid's lookups an eighth of that (384; root's are not
# counted). uid 1000 makes 80 cgroups in its delegated subtree through the shadow and pins every
# name under it (an O_PATH descriptor each, progs/fdkeep.c pin, its own limit 4096): its lookups
# get EMFILE once its nodes hold 384 descriptors. Meanwhile uid 1001 reads a shadow file of
# another cgroup, and a hog over L elsewhere (T = 600 ms) is killed on time. Then the pinner is
# killed: the kernel keeps the unused entries cached (a FUSE dentry is deleted at its last dput
# only with delete_stale), and the daemon's sweeper asks it to drop them
# (FUSE_NOTIFY_INVAL_ENTRY): the daemon's descriptors fall back to where they were.
# Figures: names pinned of those tried, the daemon's descriptors before/pinned/after and how
# long after the kill they were given back, the kill's lateness.
# timeout: 240
. /oomd/lib.sh
command -v fdkeep >/dev/null || skip "tests/vm/progs/fdkeep is not built"
nr0=$(cat /proc/sys/fs/nr_open)
trap 'echo "$nr0" >/proc/sys/fs/nr_open' EXIT
echo 4096 >/proc/sys/fs/nr_open || fail "cannot lower fs.nr_open"
start_daemon /shadow
echo "$nr0" >/proc/sys/fs/nr_open
lim=$(awk '/^Max open files/ {print $4}' "/proc/$DAEMON_PID/limits")
[ "$lim" = 4096 ] || fail "the daemon's RLIMIT_NOFILE is $lim, not 4096"
nfd() { ls "/proc/$DAEMON_PID/fd" | wc -l; }
U=1000
d=$(mkcg pin); sd=/shadow${d#$CGROOT}
echo +memory >"$d/cgroup.subtree_control" || fail "cannot enable memory below $d"
delegate "$d" "$U"
i=0
while [ "$i" -lt 80 ]; do
	odt asuser "$U" "$U" mkdir "$sd/c$i" || fail "uid $U cannot make $sd/c$i"
	i=$((i + 1))
done
cg=$(mkcg other); s=/shadow${cg#$CGROOT}
setknob "$s" memory.max $((32 * MiB))
setknob "$s" memory.oom_delay_millisecs 600
chmod o+r "$cg/memory.current"
f0=$(nfd)
ulimit -n 4096
rm -f /tmp/pin.ready
odt asuser "$U" "$U" fdkeep pin "$sd" /tmp/pin.ready >/tmp/pin.out 2>&1 &
PN=$!
wait_for 120000 test -e /tmp/pin.ready || fail "the pinner did not finish: $(cat /tmp/pin.out)"
line=$(cat /tmp/pin.out)
pinned=$(echo "$line" | sed -n 's/^pinned \([0-9]*\) of \([0-9]*\) .*/\1/p')
tried=$(echo "$line" | sed -n 's/^pinned \([0-9]*\) of \([0-9]*\) .*/\2/p')
[ -n "$pinned" ] || fail "pinner: $line"
case "$line" in *"refused=Too many open files"*) ;; *) fail "uid $U's lookups were not refused with EMFILE: $line" ;; esac
f1=$(nfd)
[ $((f1 - f0)) -le 400 ] || fail "uid $U's pinned names hold $((f1 - f0)) of the daemon's descriptors (share 384)"
r=$(odt asuser 1001 1001 cat "$s/memory.current" 2>&1) || fail "uid 1001's read while uid $U pins its names: $r"
cat "$s/memory.oom_control" >/dev/null || fail "root's read while uid $U pins its names"
# killed_on_time's steps, with room for a slow hog: at load 26 the onset came more than its 3 s
# after the hog started
k0=$(evkey "$cg" oom_kill)
kill_watch "$cg"
start_hog "$cg" 256
wait_for 30000 _has_deadline "$cg" || fail "no hold within 30 s ($(hold_state "$cg" "$s"))"
dl=$(_deadline_of "$cg")
wait_for 15000 dead "$HOG_PID" || fail "the hog outlived its hold ($(hold_state "$cg" "$s"))"
kl=$(kill_late "$cg" "$dl")
awk -v l="$kl" 'BEGIN { exit !(l < 2000) }' || fail "the kill came $kl ms after the deadline while uid $U pinned its names"
[ "$(evkey "$cg" oom_kill)" -gt "$k0" ] || fail "the kernel's oom_kill did not move"
f2=$(nfd)
kill "$PN"
wait "$PN" 2>/dev/null
tk=$(now_ms)
back() { [ "$(nfd)" -le $((f0 + 16)) ]; }
wait_for 30000 back || fail "30 s after the pinner died the daemon still holds $(nfd) descriptors (before: $f0)"
tb=$(($(now_ms) - tk))
f3=$(nfd)
r=$(odt asuser "$U" "$U" cat "$sd/c1/memory.current" 2>&1) || fail "uid $U cannot read its own cgroup afterwards: $r"
alive "$DAEMON_PID" || fail "the daemon died"
stop_daemon
pass "uid $U pinned $pinned of $tried names, then EMFILE; the daemon's descriptors $f0 before, $f1 pinned, $f2 after the kill path ran;" \
	"uid 1001's read and root's worked; kill +$kl ms after the deadline; ${tb} ms after the pinner died: $f3 descriptors"
