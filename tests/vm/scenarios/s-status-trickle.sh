# s-status-trickle (issue 14, review): the status thread serves one connection at a time, and
# the metrics port is reachable by any local uid. uid 1000 connects to the metrics port and
# trickles one byte a second, never finishing its request. Before the fix every read waited up
# to 2 s afresh (SO_RCVTIMEO is per call): the trickler kept the thread for as long as it liked
# and `oomdelayfs status` of root over the UNIX socket got no answer for 20 s and more (and the
# daemon's stop would have joined that thread as long). Now one deadline bounds each
# connection: the trickler gets its 404 within 2 s of connecting and root's status answers
# within 5 s, and a proper scrape right after gets its metrics.
# Figures: the trickler's time to its answer, root's status time, the scrape's size.
# timeout: 120
. /oomd/lib.sh
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
PORT=9465
start_daemon /shadow --metrics-port "$PORT"
t0=$(now_ms)
(i=0; while [ $i -lt 40 ]; do printf G; sleep 1; i=$((i + 1)); done) |
	odt asuser 1000 1000 nc 127.0.0.1 "$PORT" >/tmp/t.out 2>&1 &
sleep 1
s0=$(now_ms)
oomdelayfs status >/tmp/st.out 2>&1 || fail "status exited $?: $(cat /tmp/st.out)"
s1=$(now_ms)
grep -q "cgroups: " /tmp/st.out || fail "status printed no table: $(head -3 /tmp/st.out)"
wait_for 5000 grep -q "404" /tmp/t.out || fail "the trickler got no answer: $(cat /tmp/t.out)"
t1=$(now_ms)
[ $((s1 - s0)) -le 5000 ] || fail "status took $((s1 - s0)) ms behind a trickling client"
printf 'GET /metrics HTTP/1.0\r\n\r\n' | nc -w 5 127.0.0.1 "$PORT" >/tmp/m.http 2>&1
grep -q '^HTTP/1.0 200 OK' /tmp/m.http || fail "the scrape after: $(head -3 /tmp/m.http)"
tail -1 /tmp/m.http | grep -qx '# EOF' || fail "the scrape after lacks '# EOF'"
stop_daemon
pass "trickler answered (404) within $((t1 - t0)) ms; root's status $((s1 - s0)) ms;" \
	"scrape after $(wc -c </tmp/m.http) bytes"
