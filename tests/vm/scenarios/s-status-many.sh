# s-status-many (issue 21, deliverable 3): the status server served one connection at a time
# for both of its listeners, and the metrics port is open to every local uid: uid 1000's
# trickling connections, 2 s each, one after another, kept root's status socket waiting as
# long as it liked. Now each listener has its own thread: with 8 connections of uid 1000
# trickling to the metrics port, root's `oomdelayfs status` answers within 1 s (all 8 of
# them got their 404 as their turn came), and a kill is on time meanwhile (the status
# threads are not on the kill path).
# Figures: root's status time, the tricklers' last answer, the kill's lateness.
# timeout: 150
. /oomd/lib.sh
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
PORT=9466
start_daemon /shadow --metrics-port "$PORT"
t0=$(now_ms)
for k in 1 2 3 4 5 6 7 8; do
	(i=0; while [ $i -lt 30 ]; do printf G; sleep 1; i=$((i + 1)); done) |
		odt asuser 1000 1000 nc 127.0.0.1 "$PORT" >"/tmp/t$k.out" 2>&1 &
done
sleep 1
worst=0
for k in 1 2 3; do
	s0=$(now_ms)
	oomdelayfs status >/tmp/st.out 2>&1 || fail "status exited $?: $(cat /tmp/st.out)"
	s1=$(now_ms)
	grep -q "cgroups: " /tmp/st.out || fail "status printed no table: $(head -3 /tmp/st.out)"
	[ $((s1 - s0)) -gt "$worst" ] && worst=$((s1 - s0))
	sleep 1
done
[ "$worst" -le 1000 ] || fail "root's status took $worst ms behind 8 trickling metrics clients"
x=$(mkcg x); sx=/shadow${x#$CGROOT}
setknob "$sx" memory.max $((32 * MiB))
setknob "$sx" memory.oom_delay_millisecs 600
kl=$(killed_on_time "$x" "$sx")
answered() { for k in 1 2 3 4 5 6 7 8; do grep -q 404 "/tmp/t$k.out" || return 1; done; }
wait_for 30000 answered || fail "not every trickler got its answer: $(grep -c 404 /tmp/t*.out)"
t1=$(($(now_ms) - t0))
stop_daemon
pass "root's status within $worst ms behind 8 trickling metrics clients; all 8 answered by +$t1 ms; kill +$kl ms"
