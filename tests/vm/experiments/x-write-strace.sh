# x-write-strace: an experiment, not part of the suite (issue 23). What the daemon does for two
# limit writes (max, then 1 GiB: each a change the rules act on), one `cat memory.current` and
# one `cat memory.stat` through the shadow: the daemon
# runs under `strace -f -tt -T`; each operation runs 20 times after a warm-up, and the
# system calls of the 20 are counted per operation, then one operation's trace is printed.
#   cp tests/vm/experiments/x-write-strace.sh tests/vm/scenarios/
#   OOMD_VM_EXTRA_BINS=/usr/bin/strace tests/vm/run-vm.sh --build-dir build --kernel 6.12 \
#     --scenario x-write-strace
#   rm tests/vm/scenarios/x-write-strace.sh
# timeout: 900
. /oomd/lib.sh
command -v strace >/dev/null || skip "strace is not in the image (OOMD_VM_EXTRA_BINS=/usr/bin/strace)"
OOMD_DAEMON_WRAP="strace -f -tt -T -o /tmp/st"
start_daemon /shadow
p=$(mkcg x); sp=/shadow${p#$CGROOT}
setknob "$p" cgroup.subtree_control +memory
mkdir "$p/c0"
one() {
	case $1 in
	write) echo max >"$sp/c0/memory.max"; echo 1073741824 >"$sp/c0/memory.max" ;;
	cur) cat "$sp/c0/memory.current" >/dev/null ;;
	stat) cat "$sp/c0/memory.stat" >/dev/null ;;
	esac
}
for what in write cur stat; do
	one "$what"; one "$what"
	sleep 1
	a=$(wc -l </tmp/st)
	i=0
	while [ $i -lt 20 ]; do one "$what"; i=$((i + 1)); done
	sleep 1
	b=$(wc -l </tmp/st)
	echo "=== $what: system calls per operation (20 operations, strace lines $a..$b)"
	sed -n "$((a + 1)),${b}p" /tmp/st | awk '{ s = $3; sub(/\(.*/, "", s); if (s ~ /^[a-z_0-9]+$/) n[s]++ }
		END { for (k in n) printf "%6.1f %s\n", n[k] / 20, k }' | sort -rn
	a=$(wc -l </tmp/st)
	one "$what"
	sleep 1
	b=$(wc -l </tmp/st)
	echo "=== $what: one operation"
	sed -n "$((a + 1)),${b}p" /tmp/st | cut -c1-200
done
stop_daemon
pass "traced"
