# s-listener-fusefd (issue 10, deliverable 1): uid 1000 serves its own FUSE mount (hellofs
# with HELLOFS_HANG=1: it never answers FLUSH nor GETATTR of /hello) and offers a descriptor
# of /hello to cgroup.event_control, 16 times as the eventfd and 16 times as the control
# file. A daemon that fstat()s or close()s such a descriptor on a FUSE worker waits for that
# server forever (16 such writes hang every worker). Now: each write fails with EINVAL at
# once, hellofs never receives a request from the daemon (it logs each one it leaves
# unanswered), a real eventfd of the same caller still registers, 32 reads of the shadow
# in parallel answer, and a hold (T = 600 ms, L = 32 MiB) is killed on time.
# Figures: the slowest refused write, the parallel reads' time, the kill's lateness.
# timeout: 120
. /oomd/lib.sh
start_daemon /shadow
L=$((32 * MiB))
cg=$(mkcg ff); s=/shadow${cg#$CGROOT}
setknob "$s" memory.max "$L"
setknob "$s" memory.oom_delay_millisecs 600
ump=/tmp/uhang
mkdir -p "$ump"
chown 1000:1000 "$ump"
HELLOFS_HANG=1 odt asuser 1000 1000 hellofs "$ump" -f 2>/tmp/hf.err &
HF=$!
wait_for 5000 _mounted "$ump" || fail "uid 1000 could not mount hellofs on $ump: $(cat /tmp/hf.err)"
rm -f /tmp/f.ready
odt asuser 1000 1000 evhostile fusefd "$s" "$ump/hello" 16 --ready /tmp/f.ready >/tmp/f.out 2>&1 &
EV=$!
wait_for 30000 test -e /tmp/f.ready || fail "the 32 writes did not all answer within 30 s: $(cat /tmp/f.out)"
line=$(cat /tmp/f.out)
echo "$line"
case "$line" in
"fusefd einval=32/32 other=none "*" legit=0") ;;
*) fail "not 32 times EINVAL and a legitimate registration: $line" ;;
esac
slowest=$(echo "$line" | sed -n 's/.*slowest=\([0-9.]*\).*/\1/p')
# a directory of its own: /tmp is shared by every scenario of a run (s-fdreserve's
# /tmp/r.out once matched a /tmp/r.* glob here and this wait never ended)
rd=$(mktemp -d /tmp/fusefd-reads.XXXXXX)
t0=$(now_ms)
i=0
while [ $i -lt 32 ]; do
	cat "$s/memory.oom_control" >"$rd/$i" 2>&1 &
	i=$((i + 1))
done
allread() { for f in "$rd"/*; do grep -q '^under_oom' "$f" || return 1; done; }
wait_for 10000 allread || fail "32 parallel reads of the shadow did not all answer within 10 s"
tr=$(($(now_ms) - t0))
kl=$(killed_on_time "$cg" "$s")
if grep -q 'left unanswered' /tmp/hf.err; then
	fail "the daemon sent the caller's FUSE server a request: $(cat /tmp/hf.err)"
fi
kill -KILL "$HF" # aborts the connection: evhostile's descriptor of /hello can close
kill "$EV"
stop_daemon
pass "32 descriptors of a hanging FUSE file refused with EINVAL, slowest write $slowest ms," \
	"none reached the caller's server; legitimate registration beside them ok;" \
	"32 parallel shadow reads in $tr ms; kill +$kl ms after the deadline"
