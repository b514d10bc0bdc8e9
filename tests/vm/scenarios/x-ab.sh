# x-ab: experiment (not committed): write path profile
# timeout: 900
. /oomd/lib.sh
start_daemon /shadow
p=$(mkcg x); sp=/shadow${p#$CGROOT}
setknob "$p" cgroup.subtree_control +memory
mkdir "$p/c0"
cs() { cat /proc/$1/task/*/status | awk '/^voluntary_ctxt/ { v += $2 } /^nonvoluntary_ctxt/ { n += $2 } END { print v, n }'; }
w() { i=0; while [ $i -lt 250 ]; do echo 1073741824 >"$1"; echo max >"$1"; i=$((i + 1)); done; }
w "$sp/c0/memory.max"
a=$(cs $DAEMON_PID)
t0=$(now_ms)
w "$sp/c0/memory.max"
t1=$(now_ms)
b=$(cs $DAEMON_PID)
echo "CS 500 writes $((t1 - t0)) ms: before=$a after=$b"
t0=$(now_ms); w "$p/c0/memory.max"; echo "CS native 500 writes $(($(now_ms) - t0)) ms"
perf record -F 2000 -e cpu-clock -g -o /tmp/perf.data -p "$DAEMON_PID" -- sleep 12 >/tmp/perf.log 2>&1 &
PP=$!
sleep 1
t0=$(now_ms)
w "$sp/c0/memory.max"; w "$sp/c0/memory.max"
echo "CS 1000 writes under perf $(($(now_ms) - t0)) ms"
wait $PP
cat /tmp/perf.log
perf report -i /tmp/perf.data --stdio --no-children --sort dso,sym -g none 2>/dev/null | grep "%" | head -50
echo "=== by dso"
perf report -i /tmp/perf.data --stdio --no-children --sort dso -g none 2>/dev/null | grep "%" | head -12
echo "=== by comm"
perf report -i /tmp/perf.data --stdio --no-children --sort comm -g none 2>/dev/null | grep "%" | head -12
stop_daemon
pass ok
