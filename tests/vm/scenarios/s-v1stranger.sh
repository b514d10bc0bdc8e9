# s-v1stranger (issue 21, deliverable 4, round three; --layout v1): uid 1000, who owns nothing,
# against root's cgroup r and against n, delegated to uid 1002 with its memory.max: beyond
# s-v1perm (the delegated owner's writes), every v1 file the view adds or translates.
# (a) Writes: memory.oom_control, use_hierarchy, limit, soft limit, failcnt, max_usage, the
#     memsw files (where swap is accounted), force_empty, tasks, cgroup.procs: EACCES on r and
#     on n, nothing changed (n's limit, r's oom_kill_disable). memory.swappiness and
#     memory.move_charge_at_immigrate (absent: no v2 counterpart) are ENOENT, and EACCES with
#     O_CREAT, for root as for uid 1000, and nothing appears in the real directory.
# (b) Reads: force_empty, cgroup.event_control and memory.pressure_level open EACCES for
#     uid 1000 (modes 0200, 0222, 0000); oom_control, usage, stat and tasks read.
# (c) cgroup.event_control lines (tests/vm/progs/evargs.c) written by uid 1000 on r, each with
#     the errno v1's memcg_write_event_control gives: a pipe, a regular file, a closed number,
#     2^31 and 99999 as the eventfd; a closed number, another cgroup's oom_control, a real
#     cgroupfs file as the control: EBADF/EINVAL; an O_PATH eventfd or control file: EBADF
#     (fdget skips O_PATH; the daemon took them before round three); eventfd + 2^32: v1 keeps the
#     low 32 bits, accepted (EBADF before); a 5,001-byte line E2BIG (kernfs: one page), 4,002
#     bytes accepted; thresholds "16Mx", " 16M": EINVAL; "-1", "16M", "" accepted; trailing
#     junk after an oom_control registration accepted; two spaces, "Cx": EINVAL.
# The legitimate actions beside: uid 1002 writes n's oom_control, limit, force_empty and moves
# its process through n's tasks; root's OOM handler on r registers after all of it, is
# signalled at r's OOM onset and the hog over L is killed on time.
# Figures: the number of refused writes, the kill's lateness.
# timeout: 90
. /oomd/lib.sh
start_daemon /shadow --layout v1
L=$((32 * MiB))
U=1000
r=$(mkcg r); sr=/shadow${r#$CGROOT}
n=$(mkcg n); sn=/shadow${n#$CGROOT}
setknob "$sr" memory.limit_in_bytes "$L"
setknob "$sr" memory.oom_delay_millisecs 600
delegate "$n" 1002
chown 1002:1002 "$n/memory.max" "$n/memory.low" "$n/memory.reclaim" || fail "chown n's memory.max, low, reclaim"
as() { odt asuser "$U" "$U" "$@"; }
nmax=$(cat "$n/memory.max")

# (a) writes
k=0
denied() { write_denied "$U" "$1" "$2"; k=$((k + 1)); }
for s in "$sr" "$sn"; do
	denied "$s/memory.oom_control" 1
	denied "$s/memory.use_hierarchy" 1
	denied "$s/memory.limit_in_bytes" -1
	denied "$s/memory.soft_limit_in_bytes" 0
	denied "$s/memory.failcnt" 0
	denied "$s/memory.max_usage_in_bytes" 0
	denied "$s/memory.force_empty" 0
	denied "$s/memory.oom_delay_millisecs" 60000
	denied "$s/tasks" $$
	denied "$s/cgroup.procs" $$
	if [ -e "$s/memory.memsw.limit_in_bytes" ]; then
		denied "$s/memory.memsw.limit_in_bytes" -1
		denied "$s/memory.memsw.max_usage_in_bytes" 0
		denied "$s/memory.memsw.failcnt" 0
	fi
done
[ "$(cat "$n/memory.max")" = "$nmax" ] || fail "n's memory.max went from $nmax to $(cat "$n/memory.max")"
grep -q '^oom_kill_disable 0' "$sr/memory.oom_control" || fail "r's oom_control changed: $(cat "$sr/memory.oom_control")"
for f in memory.swappiness memory.move_charge_at_immigrate; do
	o=$(as odt open "$sr/$f" wronly); [ "$o" = ENOENT ] || fail "uid $U's open of absent $f: $o, not ENOENT"
	o=$(as odt open "$sr/$f" wronly,creat); [ "$o" = EACCES ] || fail "uid $U's O_CREAT of $f: $o, not EACCES"
	o=$(odt open "$sr/$f" wronly,creat); [ "$o" = EACCES ] || fail "root's O_CREAT of $f in the v1 view: $o, not EACCES"
	[ -e "$r/$f" ] && fail "$f appeared in the real directory"
	k=$((k + 3))
done

# (b) reads
for f in memory.force_empty cgroup.event_control memory.pressure_level; do
	[ -e "$sr/$f" ] || continue
	o=$(as odt open "$sr/$f" rdonly); [ "$o" = EACCES ] || fail "uid $U's read open of $f: $o, not EACCES"
	k=$((k + 1))
done
for f in memory.oom_control memory.usage_in_bytes memory.stat tasks; do
	as cat "$sr/$f" >/dev/null || fail "uid $U cannot read $f (readable on v1 too)"
done

# (c) cgroup.event_control lines, as uid 1000 on r (each registration stays until evargs exits)
as evargs "$sr/cgroup.event_control" "$sr/memory.oom_control" \
	--file "$sr/memory.stat" --file "$sn/memory.oom_control" --file "$r/memory.current" \
	--file "$sr/memory.usage_in_bytes" \
	'{E} {C}' '{P} {C}' '{F0} {C}' '{X} {C}' '99999 {C}' '2147483648 {C}' '{E} {X}' \
	'{E} {F1}' '{E} {F2}' '{Q} {C}' '{E} {O}' '{W} {C}' '{Z5000}{E} {C}' '{Z4000}{E} {C}' \
	'{E} {F3} 16Mx' '{E} {F3}  16M' '{E} {F3} -1' '{E} {F3} 16M' '{E} {F3}' '{E} {C} junk' \
	'{E}  {C}' '{E} {C}x' </dev/null >/tmp/evargs.out 2>&1 || fail "evargs: $(cat /tmp/evargs.out)"
cat /tmp/evargs.out
want='{E} {C} ok
{P} {C} EINVAL
{F0} {C} EINVAL
{X} {C} EBADF
99999 {C} EBADF
2147483648 {C} EBADF
{E} {X} EBADF
{E} {F1} EINVAL
{E} {F2} EINVAL
{Q} {C} EBADF
{E} {O} EBADF
{W} {C} ok
{Z5000}{E} {C} E2BIG
{Z4000}{E} {C} ok
{E} {F3} 16Mx EINVAL
{E} {F3}  16M EINVAL
{E} {F3} -1 ok
{E} {F3} 16M ok
{E} {F3} ok
{E} {C} junk ok
{E}  {C} EINVAL
{E} {C}x EINVAL'
got=$(cat /tmp/evargs.out)
[ "$got" = "$want" ] || fail "cgroup.event_control answers differ from v1's: $(echo "$got" | tr '\n' ';')"
nl=$(echo "$want" | wc -l)

# the legitimate actions beside: the owner of n, and root's handler on r
o=$(odt asuser 1002 1002 odt write "$sn/memory.oom_control" 1 2>&1) || fail "n's owner cannot write its oom_control: $o"
o=$(odt asuser 1002 1002 odt write "$sn/memory.limit_in_bytes" $((64 * MiB)) 2>&1) || fail "n's owner cannot set its limit: $o"
[ "$(cat "$n/memory.max")" != "$nmax" ] || fail "n's owner's limit did not reach memory.max"
o=$(odt asuser 1002 1002 odt write "$sn/memory.force_empty" 0 2>&1) || fail "n's owner cannot force_empty: $o"
odt asuser 1002 1002 mkdir "$sn/c1" "$sn/c2" || fail "n's owner cannot make children through the v1 view"
odt asuser 1002 1002 sleep 600 &
sp=$!
usleep 100000
echo "$sp" >"$n/c1/cgroup.procs" || fail "root cannot put pid $sp in n/c1"
o=$(odt asuser 1002 1002 sh -c "echo $sp >$sn/c2/tasks" 2>&1) || fail "n's owner cannot move its process through c2's tasks: $o"
grep -q "/n/c2\$" "/proc/$sp/cgroup" || fail "pid $sp is in $(cat "/proc/$sp/cgroup"), not n/c2"
kill "$sp"
v1listener "$sr" --count 1 --timeout 60000 --ready /tmp/root.ready >/tmp/root.out 2>&1 &
wait_for 10000 test -e /tmp/root.ready || fail "root's handler did not register on r: $(cat /tmp/root.out)"
kl=$(killed_on_time "$r" "$sr")
wait_for 10000 grep -q '^signal 1 ' /tmp/root.out || fail "root's handler was not signalled: $(cat /tmp/root.out)"
alive "$DAEMON_PID" || fail "the daemon died"
stop_daemon
pass "$k opens and writes by uid $U on r and n refused as on v1 (EACCES/ENOENT), nothing changed;" \
	"$nl cgroup.event_control lines answered as v1's memcg_write_event_control; n's owner wrote" \
	"its oom_control, limit and tasks; root's handler on r signalled, kill +$kl ms"
