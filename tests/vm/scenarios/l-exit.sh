# l-exit (issue 4, deliverable 1): registrations are bounded and end with the listener's
# process. Observed from outside: the daemon's eventfd and pidfd descriptors (/proc/PID/fd; each
# listener holds two: its eventfd copy and a pidfd) and the per-cgroup bound, which must admit new
# listeners again once the old ones' processes have exited.
#  1. one process asks for 300 registrations: 256 are accepted, the rest refused (ENOMEM, issue 10: what memcg_write_event_control answers when it cannot allocate);
#  2. it exits (SIGKILL): the daemon's descriptors return to the baseline;
#  3. two processes share the cgroup's bound (200 + 100 -> 200 + 56, then ENOMEM);
#  4. both exit; a new process gets all 256 again; after it exits, the baseline again;
#  5. a registrant that forks and exits: the child holding the eventfd still hears (as v1).
# Figures: time from exit to the descriptors being released.
# timeout: 90
. /oomd/lib.sh
start_daemon /shadow
cg=$(mkcg e); s=/shadow${cg#$CGROOT}
# the daemon's eventfds and pidfds (its own wake-up eventfds are in the baseline; the FUSE
# loop's /dev/fuse clones and inode-table descriptors vary with load and are not counted)
nfd() { ls -l "/proc/$DAEMON_PID/fd/" | grep -c -e 'anon_inode:\[eventfd\]' -e 'anon_inode:\[pidfd\]' -e 'pidfd'; }
fdis() { [ "$(nfd)" -le "$1" ]; }
fdlist() { for f in /proc/$DAEMON_PID/fd/*; do readlink "$f"; done | sort | uniq -c | tr '\n' ' '; }
listen() { # listen NAME K: start a listener process with K registrations; sets LPID
	rm -f "/tmp/le.$1.r"
	v1listener "$s" --listeners "$2" --timeout 120000 --ready "/tmp/le.$1.r" >"/tmp/le.$1.out" 2>&1 &
	LPID=$!
	wait_for 20000 test -e "/tmp/le.$1.r" || fail "$1: no registration: $(cat "/tmp/le.$1.out")"
	cat "/tmp/le.$1.out"
}
# warm up: the shadow lookups of the path keep O_PATH descriptors in the daemon's inode
# table (until the kernel forgets them); a first listener makes them, the baseline follows
listen w 1; nw=$(nfd); kill -KILL "$LPID"; wait "$LPID" 2>/dev/null
# its registration (an eventfd and a pidfd) must be gone before the baseline is taken
wait_for 5000 fdis $((nw - 2)) || fail "warm-up: the daemon still holds $(nfd) fds 5 s after the listener exited (with it: $nw): $(fdlist)"
n0=$(nfd)
echo "baseline: $n0 fds: $(fdlist)"
regs() { sed -n 's/^registered [0-9.]* listeners=\([0-9]*\).*/\1/p' "/tmp/le.$1.out"; }
# 1.
listen a 300; A=$LPID
[ "$(regs a)" = 256 ] || fail "1: $(regs a) registrations accepted of 300, not 256"
grep -q 'refused=ENOMEM' /tmp/le.a.out || fail "1: the 257th registration was not refused with ENOMEM: $(cat /tmp/le.a.out)"
n1=$(nfd)
[ "$n1" -ge $((n0 + 512)) ] || fail "1: daemon holds $n1 fds with 256 listeners (baseline $n0)"
# 2.
t0=$(now_ms)
kill -KILL "$A"; wait "$A" 2>/dev/null
wait_for 5000 fdis "$n0" || fail "2: daemon still holds $(nfd) fds 5 s after the listener exited (baseline $n0): $(fdlist)"
r2=$(($(now_ms) - t0))
# 3.
listen b 200; B=$LPID
listen c 100; C=$LPID
[ "$(regs b)" = 200 ] || fail "3: b got $(regs b) of 200"
[ "$(regs c)" = 56 ] || fail "3: c got $(regs c) of 100 with 200 taken, not 56: $(cat /tmp/le.c.out)"
grep -q 'refused=ENOMEM' /tmp/le.c.out || fail "3: c was not refused with ENOMEM"
# 4.
t0=$(now_ms)
kill -TERM "$B" "$C"; wait "$B" "$C" 2>/dev/null
wait_for 5000 fdis "$n0" || fail "4: daemon still holds $(nfd) fds after b and c exited (baseline $n0)"
r4=$(($(now_ms) - t0))
listen d 256; D=$LPID
[ "$(regs d)" = 256 ] || fail "4: d got $(regs d) of 256 after the others exited: $(cat /tmp/le.d.out)"
grep -q refused /tmp/le.d.out && fail "4: d refused: $(cat /tmp/le.d.out)"
kill -TERM "$D"; wait "$D" 2>/dev/null
wait_for 5000 fdis "$n0" || fail "4: daemon still holds $(nfd) fds after d exited (baseline $n0)"
# 5. v1 kept a registration for as long as its eventfd lived: a handler that registers and
#    then daemonizes (fork, the parent exits) keeps hearing through its child; the registration
#    follows the child and ends when the child exits.
rm -f /tmp/le.f.r
v1listener "$s" --fork --count 1 --timeout 8000 --ready /tmp/le.f.r >/tmp/le.f.out 2>&1
wait_for 5000 test -e /tmp/le.f.r || fail "5: forked listener not ready: $(cat /tmp/le.f.out)"
usleep 1000000
setknob "$s" memory.max $((32 * MiB))
setknob "$s" memory.oom_delay_millisecs 2000
start_hog "$cg" 48 --exit
wait_for 20000 grep -q -e '^signal' -e '^timeout' /tmp/le.f.out || fail "5: the forked listener never ended: $(cat /tmp/le.f.out)"
setknob "$s" memory.max $((96 * MiB))
wait "$HOG_PID"
grep -q '^signal' /tmp/le.f.out || fail "5: the forked child of a registrant that exited was not signalled (v1 kept the registration while the eventfd lived): $(cat /tmp/le.f.out)"
wait_for 5000 fdis "$n0" || fail "5: daemon still holds $(nfd) eventfds/pidfds after the forked child exited (baseline $n0)"
fork5="a registrant that forked and exited: its child (holding the eventfd) was signalled, and its exit ended the registration"
stop_daemon
pass "$fork5;" \
	"daemon eventfds+pidfds: baseline $n0, $n1 with 256 listeners; released ${r2} ms after SIGKILL, ${r4} ms after SIGTERM of two;" \
	"limit 256 per cgroup (257th: ENOMEM), shared across processes (200+56), all 256 free again after exit"
