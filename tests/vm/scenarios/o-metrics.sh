# o-metrics (issue 14): `oomdelayfs status --metrics` (OpenMetrics text) moves with the holds.
# Before: no hold. A hold starts (T = 4000 ms, kernel mode): holds_started 1, one cgroup held.
# Its deadline passes: the kernel's OOM killer kills, holds_ended{how="kill-kernel"} 1, the
# kill-lateness histogram counts it (and its sum stays under 1 s), held back to 0. A second
# hold ended by a raise counts under how="raise". FUSE requests by operation grow (at least the
# five knob writes). The same
# text is served by the opt-in HTTP listener on 127.0.0.1 (what a scraper reads), which is off
# by default.
# timeout: 150
. /oomd/lib.sh
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
PORT=9464
start_daemon /shadow
# busybox's static wget crashes in this image: plain HTTP/1.0 through nc
scrape() { printf 'GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' | nc -w 5 127.0.0.1 "$PORT"; }
scrape >/tmp/m.none 2>&1 && [ -s /tmp/m.none ] && fail "a metrics listener without --metrics-port: $(head -3 /tmp/m.none)"
stop_daemon
start_daemon /shadow --metrics-port "$PORT"
m() { oomdelayfs status --metrics >/tmp/m.txt || fail "status --metrics exited $?"; }
# metric NAME: its value in /tmp/m.txt (NAME with labels, as printed)
metric() { awk -v n="$1" '$1 == n {print $2; f = 1} END {if (!f) print "missing"}' /tmp/m.txt; }
m; cp /tmp/m.txt /tmp/m.0
tail -1 /tmp/m.0 | grep -qx '# EOF' || fail "no '# EOF' at the end"
[ "$(metric oomdelayfs_holds_started_total)" = 0 ] || fail "holds before any: $(metric oomdelayfs_holds_started_total)"
l0=$(metric 'oomdelayfs_fuse_requests_total{op="lookup"}')
L=$((32 * MiB))
cg=$(mkcg k); s=/shadow${cg#$CGROOT}
setknob "$s" memory.max "$L"
setknob "$s" memory.oom_delay_millisecs 4000
start_hog "$cg" 48
uoom() { grep -q '^under_oom 1' "$1/memory.oom_control"; }
wait_for 30000 uoom "$s" || fail "no hold within 30 s: $(hold_state "$cg" "$s")"
m; cp /tmp/m.txt /tmp/m.1
h1=$(metric 'oomdelayfs_cgroups{state="held"}'); s1=$(metric oomdelayfs_holds_started_total)
[ "$h1" = 1 ] && [ "$s1" = 1 ] || fail "during the hold: held $h1, started $s1"
wait_for 10000 dead "$HOG_PID" || fail "the hog lives 10 s after the onset with a 4 s delay"
ended_kill() { m; [ "$(metric 'oomdelayfs_holds_ended_total{how="kill-kernel"}')" = 1 ]; }
wait_for 5000 ended_kill || fail "no kill-kernel end counted: $(grep ended /tmp/m.txt)"
cp /tmp/m.txt /tmp/m.2
h2=$(metric 'oomdelayfs_cgroups{state="held"}')
[ "$h2" = 0 ] || fail "held $h2 after the kill"
lc=$(metric oomdelayfs_kill_lateness_seconds_count); ls=$(metric oomdelayfs_kill_lateness_seconds_sum)
[ "$lc" = 1 ] || fail "kill lateness count $lc"
awk -v s="$ls" 'BEGIN{exit !(s >= 0 && s < 1)}' || fail "kill lateness $ls s"
[ "$(metric 'oomdelayfs_kill_lateness_seconds_bucket{le="+Inf"}')" = 1 ] || fail "+Inf bucket"
[ "$(metric oomdelayfs_broken_promises_total)" = 0 ] || fail "a broken promise counted"
# a second hold, ended by a raise
cg2=$(mkcg r); s2=/shadow${cg2#$CGROOT}
setknob "$s2" memory.max "$L"
setknob "$s2" memory.oom_delay_millisecs 30000
start_hog "$cg2" 48 --exit
wait_for 30000 uoom "$s2" || fail "no second hold within 30 s"
setknob "$s2" memory.max $((96 * MiB))
wait "$HOG_PID" || fail "the second hog was killed"
ended_raise() { m; [ "$(metric 'oomdelayfs_holds_ended_total{how="raise"}')" = 1 ]; }
wait_for 5000 ended_raise || fail "no raise end counted: $(grep ended /tmp/m.txt)"
s3=$(metric oomdelayfs_holds_started_total)
[ "$s3" = 2 ] || fail "started $s3 after two holds"
l3=$(metric 'oomdelayfs_fuse_requests_total{op="lookup"}'); w3=$(metric 'oomdelayfs_fuse_requests_total{op="write"}')
[ "$l3" -gt "$l0" ] && [ "$w3" -ge 5 ] || fail "FUSE requests: lookup $l0 -> $l3, write $w3"
# the scraper's view
scrape >/tmp/m.resp 2>&1 || fail "no answer on 127.0.0.1:$PORT: $(cat /tmp/m.resp)"
head -1 /tmp/m.resp | grep -q '^HTTP/1.0 200 OK' || fail "HTTP status: $(head -1 /tmp/m.resp)"
grep -qi '^Content-Type: application/openmetrics-text; version=1.0.0' /tmp/m.resp || fail "content type: $(head -4 /tmp/m.resp)"
tr -d '\r' </tmp/m.resp | sed '1,/^$/d' >/tmp/m.http
grep -q '^oomdelayfs_holds_ended_total{how="raise"} 1$' /tmp/m.http || fail "HTTP metrics differ: $(head -5 /tmp/m.http)"
tail -1 /tmp/m.http | grep -qx '# EOF' || fail "HTTP metrics lack '# EOF'"
grep -q "^tcp.*:$(printf '%04X' "$PORT") " /proc/net/tcp6 2>/dev/null && fail "listening on IPv6 too"
awk -v p=":$(printf '%04X' "$PORT")" '$2 ~ p"$" && $4 == "0A" {print $2}' /proc/net/tcp | grep -q '^0100007F:' ||
	fail "the listener is not on 127.0.0.1 only: $(cat /proc/net/tcp)"
stop_daemon
echo "--- the metrics after both holds:"; cat /tmp/m.txt
pass "holds_started 0 -> 1 (held 1) -> kill-kernel 1 (held 0, lateness $(awk -v s="$ls" 'BEGIN{printf "%.1f", s * 1000}') ms)" \
	"-> raise 1, started 2; lookups $l0 -> $l3, writes $w3; HTTP on 127.0.0.1:$PORT only"
