# o-status (issue 14): `oomdelayfs status` asks the running daemon over its UNIX socket.
# A held cgroup with a v1 listener shows up with L, T, D, "held", the time left to its deadline,
# 1 listener; a managed cgroup beside it with D = 1; --json says the same; once a handler raises
# L the hold's record says "raise" in status and in the journal line (hold id, CGROUP). The
# socket is root's (mode 0600): another user is refused, and with --status-group the members of
# that group are let in (0660) while the others still are not.
# timeout: 150
. /oomd/lib.sh
SOCK=/run/oomdelayfs/status.sock
start_daemon /shadow
[ -S "$SOCK" ] || fail "no status socket $SOCK"
mode=$(stat -c '%a %u:%g' "$SOCK")
[ "$mode" = "600 0:0" ] || fail "status socket is $mode, not 600 0:0"
odt asuser 1000 1000 oomdelayfs status >/tmp/st.user 2>&1; urc=$?
[ "$urc" = 1 ] || fail "a user's status exited $urc, not 1: $(cat /tmp/st.user)"
grep -q "Permission denied" /tmp/st.user || fail "a user was not refused: $(cat /tmp/st.user)"
L=$((32 * MiB))
cg=$(mkcg app); s=/shadow${cg#$CGROOT}
cg2=$(mkcg keep); s2=/shadow${cg2#$CGROOT}
setknob "$s" memory.max "$L"
setknob "$s" memory.oom_delay_millisecs 30000
setknob "$s2" memory.max 64M
setknob "$s2" memory.oom_control 1
oomdelayfs status >/tmp/st.0 || fail "status exited $?: $(cat /tmp/st.0)"
cat /tmp/st.0
row() { awk -v p="$2" '$1 == p' "$1"; }
r0=$(row /tmp/st.0 "$cg")
[ "$(echo "$r0" | awk '{print $2, $3, $4, $5}')" = "$L 30000 0 managed" ] || fail "before the hold: '$r0'"
r2=$(row /tmp/st.0 "$cg2")
[ "$(echo "$r2" | awk '{print $2, $4, $5}')" = "$((64 * MiB)) 1 managed" ] || fail "the D = 1 cgroup: '$r2'"
rm -f /tmp/o.ready
v1listener "$s" --timeout 60000 --ready /tmp/o.ready >/tmp/o.listener 2>&1 &
LPID=$!
wait_for 5000 test -e /tmp/o.ready || fail "listener did not register: $(cat /tmp/o.listener)"
start_hog "$cg" 48 --exit
uoom() { grep -q '^under_oom 1' "$1/memory.oom_control"; }
wait_for 30000 uoom "$s" || fail "no hold within 30 s: $(hold_state "$cg" "$s")"
held_in_status() { oomdelayfs status >/tmp/st.1 && [ "$(row /tmp/st.1 "$cg" | awk '{print $5}')" = held ]; }
wait_for 5000 held_in_status || fail "status does not show the hold: $(cat /tmp/st.1)"
cat /tmp/st.1
r1=$(row /tmp/st.1 "$cg")
left=$(echo "$r1" | awk '{print $6}'); nl=$(echo "$r1" | awk '{print $7}')
[ "$left" -gt 25000 ] && [ "$left" -le 30000 ] || fail "time left $left ms, not in (25000, 30000]: '$r1'"
[ "$nl" = 1 ] || fail "listeners $nl, not 1: '$r1'"
grep -q 'cgroups: .* 1 held' /tmp/st.1 || fail "no held count: $(head -2 /tmp/st.1)"
head -1 /tmp/st.1 | grep -q ': ok$' || fail "health not ok: $(head -1 /tmp/st.1)"
oomdelayfs status --json >/tmp/st.json || fail "status --json exited $?"
grep -q "\"path\" : \"$cg\"" /tmp/st.json || fail "no $cg in the JSON: $(cat /tmp/st.json)"
grep -q '"state" : "held"' /tmp/st.json || fail "no held state in the JSON"
grep -q '"health" : "ok"' /tmp/st.json || fail "no health in the JSON"
setknob "$s" memory.max $((96 * MiB))
wait "$HOG_PID"; rc=$?
[ "$rc" = 0 ] || fail "hog exited $rc (killed?)"
ended() { oomdelayfs status >/tmp/st.2 && grep -Eq "^1 +$cg .* raise " /tmp/st.2; }
wait_for 5000 ended || fail "status has no 'raise' record of hold 1: $(cat /tmp/st.2)"
cat /tmp/st.2
rec=$(grep -E "^1 +$cg " /tmp/st.2)
usage=$(echo "$rec" | awk '{print $6}'); lis=$(echo "$rec" | awk '{print $7}'); held=$(echo "$rec" | awk '{print $9}')
[ "$usage" -ge "$L" ] || fail "usage at the onset $usage < L $L: '$rec'"
[ "$lis" -ge 1 ] || fail "the record counts $lis listeners notified: '$rec'"
grep -q "hold 1 started: $cg" /tmp/oomdelayfs.log || fail "no journal record of the onset"
grep -q "hold 1 ended: $cg, raise" /tmp/oomdelayfs.log || fail "no journal record of the end"
kill "$LPID" 2>/dev/null; wait "$LPID" 2>/dev/null
stop_daemon
[ -e "$SOCK" ] && fail "the socket stays after the daemon stopped"
oomdelayfs status >/tmp/st.gone 2>&1; grc=$?
[ "$grc" = 1 ] || fail "status without a daemon exited $grc, not 1"
# a group of operators
echo "oomops:x:2345:" >>/etc/group
start_daemon /shadow --status-group oomops
gmode=$(stat -c '%a %u:%g' "$SOCK")
setknob "$s2" memory.oom_control 1 # the stop handed every cgroup back
[ "$gmode" = "660 0:2345" ] || fail "with --status-group the socket is $gmode, not 660 0:2345"
odt asuser 1000 2345 oomdelayfs status >/tmp/st.g 2>&1 || fail "a member of oomops was refused: $(cat /tmp/st.g)"
grep -q "^$cg2 " /tmp/st.g || fail "the member's status lacks $cg2: $(cat /tmp/st.g)"
odt asuser 1000 1000 oomdelayfs status >/dev/null 2>&1 && fail "a non-member got the status"
stop_daemon
pass "socket 600 root (user refused, exit $urc), 660 root:oomops with --status-group (member served);" \
	"held row: L $L, T 30000, left $left ms, $nl listener; record: usage $usage, $lis listener signal, raise;" \
	"held $held ms"
