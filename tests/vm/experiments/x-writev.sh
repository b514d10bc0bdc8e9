# x-writev: an experiment, not part of the suite (issue 23). What the shadow writes to
# /dev/fuse during an all-files read (the first iov: the 16-byte out header): replies (unique != 0) and notifications (unique 0,
# by code: 1 poll, 2 inval_inode, 3 inval_entry, 4 store, 5 retrieve, 6 delete), per file,
# from strace of writev with the out header's bytes, over 500 cgroups; also the rt_sigprocmask
# and read calls per file.
#   cp tests/vm/experiments/x-writev.sh tests/vm/scenarios/
#   OOMD_VM_EXTRA_BINS=/usr/bin/strace OOMD_VM_MEM=3072 tests/vm/run-vm.sh --build-dir build \
#     --kernel 7 --scenario x-writev
#   rm tests/vm/scenarios/x-writev.sh
# timeout: 900
. /oomd/lib.sh
command -v strace >/dev/null || skip "strace is not in the image (OOMD_VM_EXTRA_BINS=/usr/bin/strace)"
N=500
p=$(mkchildren x $N)
start_daemon /shadow
sp=/shadow${p#$CGROOT}
for f in memory.current memory.stat memory.stat; do
	cat "$sp"/*/$f >/dev/null
	odt sleep 1500
	strace -f -p "$DAEMON_PID" -e trace=writev,read,rt_sigprocmask,newfstatat,openat,close,prlimit64 -xx -s 16 -o /tmp/wv 2>/dev/null &
	s=$!
	sleep 1
	cat "$sp"/*/$f >/dev/null
	sleep 0.5
	kill -INT $s; wait $s
	echo "X $f: $(wc -l </tmp/wv) lines"
	grep 'writev(' /tmp/wv | sed -n 's/^[^"]*iov_base="\([^"]*\)".*/\1/p' | awk -v n=$N '
	{ h = $0; gsub(/\\x/, "", h);
	  u = substr(h, 17, 16); e = substr(h, 9, 2);
	  if (u == "0000000000000000") notif[e]++; else if (substr(h, 9, 8) != "00000000") err[substr(h, 9, 8)]++; else rep++ }
	END { printf "X   replies %.2f/file", rep / n; for (k in err) printf ", error-replies %s %.2f", k, err[k] / n;
	      for (k in notif) printf ", notify code %s: %.2f/file", k, notif[k] / n; print "" }'
	for sc in read rt_sigprocmask newfstatat openat close prlimit64; do
		printf 'X   %s %.2f/file\n' $sc "$(grep -c "$sc(" /tmp/wv | awk -v n=$N '{print $1 / n}')"
	done
	grep 'read(' /tmp/wv | grep -o '= -1 [A-Z]*' | sort | uniq -c | sed 's/^/X   read errors: /'
	grep -o 'prlimit64([^)]*)' /tmp/wv | sort | uniq -c | head -3 | sed 's/^/X   /'
	grep 'newfstatat(' /tmp/wv | sed 's/newfstatat([0-9]*, "\([^"]*\)".*/\1/' | awk '{print $NF}' | sed 's/^[0-9]* //' | sort | uniq -c | sort -rn | head -5 | sed 's/^/X   stat: /'
done
stop_daemon
pass "measured"
