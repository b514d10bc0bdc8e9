# x-trim-faults: an experiment, not part of the suite. Which library pages a hold and its kill
# fault into the daemon after start-up (daemon/text_trim.c gives some back before mlockall;
# MCL_ONFAULT locks a page only once it is touched again): the resident kB of each library's
# mappings in the daemon, and each thread's minor/major faults, at three points: 2 s after
# "serving", during a hold (after the deadline was set), and 0.5 s after the kill. A library
# whose resident kB grows between the hold and the kill had pages faulted in on the kill
# path; in the VM the files live in the initramfs (RAM, never evicted), so there it costs a
# minor fault, but on a disk-backed host under global pressure it is a read from disk.
# Run it by copying it among the scenarios:
#   cp tests/vm/experiments/x-trim-faults.sh tests/vm/scenarios/
#   tests/vm/run-vm.sh --build-dir build --kernel 6.12 --scenario x-trim-faults
#   rm tests/vm/scenarios/x-trim-faults.sh
# only when named
# timeout: 300
. /oomd/lib.sh
start_daemon /shadow
wait_for 15000 _served 0 || fail "not serving within 15 s"
odt sleep 2000
LIBS="libglib-2.0 libfuse3 libc.so ld-linux libgobject libjson-glib libgio oomdelayfs"
snap() { # snap LABEL: one line of resident kB by library, one of faults by thread
	_o="$1 rss_kB:"
	for _l in $LIBS; do
		_o="$_o $_l=$(awk -v lib="$_l" '/^[0-9a-f]+-[0-9a-f]+ / { m = index($0, lib) > 0 }
			m && /^Rss:/ { s += $2 } END { print s + 0 }' "/proc/$DAEMON_PID/smaps")"
	done
	echo "$_o"
	_o="$1 faults(min/maj):"
	for _t in /proc/"$DAEMON_PID"/task/*; do
		# after "(comm) ": state ppid pgrp session tty tpgid flags minflt cminflt majflt
		_o="$_o $(tr ' ' _ <"$_t/comm")=$(sed 's/.*) //' "$_t/stat" | awk '{ print $8 "/" $10 }')"
	done
	echo "$_o"
}
L=$((32 * MiB))
cg=$(mkcg trim)
s=/shadow${cg#$CGROOT}
setknob "$s" memory.max "$L"
setknob "$s" memory.oom_delay_millisecs 2000
snap serving
odt hog 64 --cgroup "$cg" --report /tmp/hog &
hog=$!
wait_for 60000 _has_deadline "$cg" || fail "no hold within 60 s"
snap hold
wait_for 20000 dead "$hog" || fail "the hog alive 20 s after its hold began"
odt sleep 500
snap killed
grep -F "$cg: delay over" /tmp/oomdelayfs.log | tail -n 1
stop_daemon
rmdir "$cg"
pass "see the rss_kB and faults lines"
