# s-listener-share (issue 21, item 4): the per-cgroup listener bound was shared by all
# callers: uid 1000 registered 255 listeners on a root-owned cgroup (its memory.oom_control
# is readable by everyone, as in v1) and root's own OOM handler got ENOMEM on it. Now a
# stranger to a cgroup (neither root nor the owner of its directory or memory.max) may hold
# 64 listeners on it, strangers together 256, and root and the owner are not counted among
# them. (a) uid 1000 asks for 256 on root's cgroup x: 64, then ENOMEM; uids 1001, 1003, 1004
# take 64 each; uid 1005 gets ENOMEM (the strangers' share is full); root's handler registers
# on x and is signalled at x's OOM onset, and the hog over L is killed on time. (b) The same
# strangers fill a cgroup y delegated to uid 1002: its owner registers beside them.
# Figures: the time the strangers took, the kill's lateness.
# timeout: 200
. /oomd/lib.sh
start_daemon /shadow
L=$((32 * MiB))
x=$(mkcg x); sx=/shadow${x#$CGROOT}
setknob "$sx" memory.max "$L"
setknob "$sx" memory.oom_delay_millisecs 600
y=$(mkcg y); sy=/shadow${y#$CGROOT}
delegate "$y" 1002
n=0
# take UID SHADOWCG ASK WANT: UID asks for ASK listeners on SHADOWCG and keeps them; it must
# get WANT (and ENOMEM for the rest)
take() {
	n=$((n + 1))
	rm -f "/tmp/t$n.ready"
	odt asuser "$1" "$1" v1listener "$2" --listeners "$3" --timeout 600000 \
		--ready "/tmp/t$n.ready" >"/tmp/t$n.out" 2>&1 &
	wait_for 60000 test -e "/tmp/t$n.ready" || fail "uid $1 on $2: not registered: $(cat "/tmp/t$n.out")"
	if [ "$4" = "$3" ]; then want="listeners=$4\$"; else want="listeners=$4 refused=ENOMEM\$"; fi
	grep -q "^registered .* $want" "/tmp/t$n.out" || fail "uid $1 on $2 asked for $3: '$(cat "/tmp/t$n.out")', not $4"
}
# one UID CG: one registration by UID; prints "ok" or the refusal's errno name
one() {
	if odt asuser "$1" "$1" v1listener "$2" --timeout 10 >/tmp/one.out 2>&1; then echo ok
	else sed -n 's/.*write cgroup.event_control: \([A-Z]*\).*/\1/p' /tmp/one.out; fi
}
# (a)
t0=$(now_ms)
take 1000 "$sx" 256 64
take 1001 "$sx" 64 64
take 1003 "$sx" 64 64
take 1004 "$sx" 64 64
r=$(one 1005 "$sx"); [ "$r" = ENOMEM ] || fail "a fifth stranger beyond the strangers' share of x: '$r'"
grep -q 'listener limit reached' /tmp/oomdelayfs.log || fail "no log line for a refusal"
tf=$(($(now_ms) - t0))
v1listener "$sx" --count 1 --timeout 60000 --ready /tmp/root.ready >/tmp/root.out 2>&1 &
RL=$!
wait_for 10000 test -e /tmp/root.ready || fail "root's handler did not register beside 256 strangers': $(cat /tmp/root.out)"
kl=$(killed_on_time "$x" "$sx")
wait_for 10000 grep -q '^signal 1 ' /tmp/root.out || fail "root's handler was not signalled: $(cat /tmp/root.out)"
# (b)
take 1000 "$sy" 64 64
take 1001 "$sy" 64 64
take 1003 "$sy" 64 64
take 1004 "$sy" 64 64
r=$(one 1002 "$sy"); [ "$r" = ok ] || fail "the owner of y could not register beside 256 strangers': '$r' ($(cat /tmp/one.out))"
r=$(one 0 "$sy"); [ "$r" = ok ] || fail "root could not register on y: '$r' ($(cat /tmp/one.out))"
alive "$DAEMON_PID" || fail "the daemon died"
stop_daemon
pass "x (root's): uid 1000 got 64 of 256, 4 strangers 256 in $tf ms, a fifth ENOMEM; root's handler" \
	"registered and signalled, kill +$kl ms; y (uid 1002's): the owner and root register beside 256"
