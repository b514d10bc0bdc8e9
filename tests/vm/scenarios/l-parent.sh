# l-parent (issue 4, rules 2, 11, 12): direction of v1 OOM notifications in a hierarchy.
# v1's mem_cgroup_oom_notify() walks the subtree of the cgroup under OOM, so a listener hears
# the onsets of its own cgroup and of every ANCESTOR (SEMANTICS rule 11):
#  A. P (L = 32 MiB, delay 30000) goes OOM through a hog in its child C: the listeners on P and
#     on C are both signalled, both read under_oom 1; a third listener that registers on C
#     during the hold is signalled at once; then P's limit is raised.
#  B. C itself (L = 32 MiB, delay 30000) goes OOM: C's listener is signalled and raises C's
#     limit; P's listener hears nothing (an OOM below is not P's OOM, as in v1).
# No kill in either part. Figures: wake times of each listener after the first one.
# timeout: 120
. /oomd/lib.sh
start_daemon /shadow
cg=$(mkcg p); sp=/shadow${cg#$CGROOT}
setknob "$sp" cgroup.subtree_control +memory
mkdir "$sp/c" || fail "shadow mkdir c"
sc=$sp/c
setknob "$sp" memory.max $((32 * MiB))
setknob "$sp" memory.oom_delay_millisecs 30000 # the raise ends the hold; a long T keeps a slow shell from losing the race
k0=$(evkey "$cg" oom_kill)
rm -f /tmp/lp.r /tmp/lc.r
v1listener "$sp" --count 1 --timeout 30000 --ready /tmp/lp.r >/tmp/lp.out 2>&1 &
LP=$!
v1listener "$sc" --count 1 --timeout 30000 --ready /tmp/lc.r >/tmp/lc.out 2>&1 &
LC=$!
wait_for 5000 test -e /tmp/lp.r -a -e /tmp/lc.r || fail "listeners did not register: $(cat /tmp/lp.out /tmp/lc.out)"
start_hog "$cg/c" 48 --exit
wait_for 40000 sh -c "! kill -0 $LP 2>/dev/null && ! kill -0 $LC 2>/dev/null" || fail "A: listeners still waiting: P: $(cat /tmp/lp.out) C: $(cat /tmp/lc.out)"
echo "A parent:"; cat /tmp/lp.out; echo "A child:"; cat /tmp/lc.out
grep -q '^signal 1 .*under_oom 1' /tmp/lp.out || fail "A: P's listener not signalled with under_oom 1: $(cat /tmp/lp.out)"
grep -q '^signal 1 .*under_oom 1' /tmp/lc.out || fail "A: C's listener did not hear its parent's OOM with under_oom 1 (rules 11, 12): $(cat /tmp/lc.out)"
# a listener that registers during the hold is signalled at once (v1 did so)
tl0=$(now_ms)
v1listener "$sc" --count 1 --timeout 3000 >/tmp/ll.out 2>&1 || fail "A: a listener registered on C during P's hold was not signalled: $(cat /tmp/ll.out)"
tl=$(($(now_ms) - tl0))
grep -q '^signal 1 .*under_oom 1' /tmp/ll.out || fail "A: late listener: $(cat /tmp/ll.out)"
lreg=$(awk '/^registered/{r=$2} /^signal 1 /{printf "%.1f", $3 - r}' /tmp/ll.out)
setknob "$sp" memory.max $((96 * MiB))
wait "$HOG_PID"; rc=$?
[ "$rc" = 0 ] || fail "A: hog exited $rc (killed?)"
tp=$(awk '/^signal 1 /{print $3}' /tmp/lp.out); tc=$(awk '/^signal 1 /{print $3}' /tmp/lc.out)
da=$(awk -v a="$tp" -v b="$tc" 'BEGIN{printf "%.2f", b - a}')
wait_for 3000 sh -c "! grep -q '^under_oom 1' $sp/memory.oom_control" || fail "A: under_oom of P still 1"
grep -q '^under_oom 0' "$sc/memory.oom_control" || fail "A: under_oom of C still 1 after P's hold"

# B: C's own OOM
setknob "$sc" memory.max $((32 * MiB))
setknob "$sc" memory.oom_delay_millisecs 30000
rm -f /tmp/lp.r /tmp/lc.r
v1listener "$sp" --timeout 12000 --ready /tmp/lp.r >/tmp/lp2.out 2>&1 &
LP=$!
v1listener "$sc" --raise $((96 * MiB)) --count 1 --timeout 30000 --ready /tmp/lc.r >/tmp/lc2.out 2>&1 &
LC=$!
wait_for 5000 test -e /tmp/lp.r -a -e /tmp/lc.r || fail "B: listeners did not register: $(cat /tmp/lp2.out /tmp/lc2.out)"
start_hog "$cg/c" 48 --exit
wait_for 30000 dead "$LC" || fail "B: C's listener not signalled: $(cat /tmp/lc2.out)"
echo "B child:"; cat /tmp/lc2.out
grep -q '^signal 1 .*under_oom 1' /tmp/lc2.out || fail "B: C's listener not signalled with under_oom 1: $(cat /tmp/lc2.out)"
wait "$HOG_PID"; rc=$?
[ "$rc" = 0 ] || fail "B: hog exited $rc (killed?)"
wait_for 15000 dead "$LP" || fail "B: P's listener still running after its timeout"
echo "B parent:"; cat /tmp/lp2.out
grep -q '^signal' /tmp/lp2.out && fail "B: P's listener was signalled by its child's OOM (v1 notifies the subtree of the cgroup under OOM, not its ancestors): $(cat /tmp/lp2.out)"
grep -q '^timeout .* signals=0' /tmp/lp2.out || fail "B: P's listener: $(cat /tmp/lp2.out)"
k1=$(evkey "$cg" oom_kill)
[ "$k1" = "$k0" ] || fail "oom_kill moved $k0 -> $k1"
stop_daemon
pass "A (P under OOM): P's and C's listeners signalled, C's ${da} ms after P's, both read under_oom 1;" \
	"a listener registered during the hold signalled ${lreg} ms after its registration (run ${tl} ms);" \
	"B (C under OOM): C's listener signalled, P's silent for 12 s; no kill (oom_kill $k0->$k1)"
