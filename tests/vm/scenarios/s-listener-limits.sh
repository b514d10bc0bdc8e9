# s-listener-limits (issue 10, deliverable 5; issue 21): listener bounds per uid (1024) and in
# total (4096, of which 512 only root may take) refuse with ENOMEM (what
# memcg_write_event_control answered when it could not allocate the event) and cost nobody
# else anything. uid 1000 fills its 1024 (4 processes of 256, the per-process bound, on 4
# cgroups delegated to it: an owner may hold 256 on its cgroup, a stranger 64, see
# s-listener-share); its next registration fails with ENOMEM while uid 1001 still registers.
# uids 1001, 1002 then fill theirs and uid 1003 takes 512: at 3584 uid 1004 is refused with
# ENOMEM while root still registers (its reserve). With everything taken, a hold (T = 600 ms,
# L = 32 MiB) is killed on time, and once uid 1000's processes exit, uid 1004 registers.
# Figures: the time to register 3584 listeners, the kill's lateness.
# timeout: 400
. /oomd/lib.sh
start_daemon /shadow
L=$((32 * MiB))
# fill UID FIRST [N]: N (4) processes of 256 listeners on cgroups fFIRST..fFIRST+N-1, delegated to UID
fill() {
	_i=$2 _n=${3:-4}
	while [ "$_i" -lt $(($2 + _n)) ]; do
		_c=$(mkcg "f$_i"); _s=/shadow${_c#$CGROOT}
		delegate "$_c" "$1"
		rm -f "/tmp/f$_i.ready"
		odt asuser "$1" "$1" v1listener "$_s" --listeners 256 --timeout 600000 \
			--ready "/tmp/f$_i.ready" >"/tmp/f$_i.out" 2>&1 &
		echo $! >>/tmp/fill.pids
		_i=$((_i + 1))
	done
	_i=$2
	while [ "$_i" -lt $(($2 + _n)) ]; do
		wait_for 120000 test -e "/tmp/f$_i.ready" || fail "uid $1: listener $_i not ready: $(cat "/tmp/f$_i.out")"
		grep -q '^registered .* listeners=256$' "/tmp/f$_i.out" || fail "uid $1: not 256 listeners: $(cat "/tmp/f$_i.out")"
		_i=$((_i + 1))
	done
}
# one UID CG: one registration by UID; prints "ok" or the refusal's errno name
one() {
	if odt asuser "$1" "$1" v1listener "$2" --timeout 10 >/tmp/one.out 2>&1; then echo ok
	else sed -n 's/.*write cgroup.event_control: \([A-Z]*\).*/\1/p' /tmp/one.out; fi
}
x=$(mkcg x); sx=/shadow${x#$CGROOT}
setknob "$sx" memory.max "$L"
setknob "$sx" memory.oom_delay_millisecs 600
rm -f /tmp/fill.pids
t0=$(now_ms)
fill 1000 0
r=$(one 1000 "$sx"); [ "$r" = ENOMEM ] || fail "uid 1000's 1025th registration: '$r' ($(cat /tmp/one.out)), not ENOMEM"
r=$(one 1001 "$sx"); [ "$r" = ok ] || fail "uid 1001 could not register beside uid 1000's 1024: $r ($(cat /tmp/one.out))"
fill 1001 4
fill 1002 8
fill 1003 12 2
tf=$(($(now_ms) - t0))
r=$(one 1004 "$sx"); [ "$r" = ENOMEM ] || fail "registration 3586 (uid 1004): '$r' ($(cat /tmp/one.out)), not ENOMEM"
r=$(one 0 "$sx"); [ "$r" = ok ] || fail "root could not register at 3585 (its reserve): '$r' ($(cat /tmp/one.out))"
grep -q "listener limit reached" /tmp/oomdelayfs.log || fail "no log line for a refusal"
k0=$(evkey "$x" oom_kill)
kill_watch "$x"
start_hog "$x" 256
dl=$(deadline_ns "$x")
wait_for 10000 dead "$HOG_PID" || fail "hog alive 10 s after the onset ($(hold_state "$x" "$sx"))"
kl=$(kill_late "$x" "$dl")
awk -v l="$kl" 'BEGIN { exit !(l < 2000) }' || fail "the kill came $kl ms after the deadline"
[ "$(evkey "$x" oom_kill)" -gt "$k0" ] || fail "the kernel's oom_kill did not move"
for p in $(head -n 4 /tmp/fill.pids); do kill "$p"; done
freed() { [ "$(one 1004 "$sx")" = ok ]; }
wait_for 10000 freed || fail "uid 1004 still refused 10 s after uid 1000's listeners exited: $(cat /tmp/one.out)"
for p in $(cat /tmp/fill.pids); do kill "$p" 2>/dev/null; done
alive "$DAEMON_PID" || fail "the daemon died"
stop_daemon
pass "uid 1000 at 1024 listeners: ENOMEM, uid 1001 still registers; 3585 in all (in $tf ms):" \
	"ENOMEM for uid 1004, root registers; kill +$kl ms after the deadline with every listener taken;" \
	"uid 1004 registers once uid 1000's exit"
