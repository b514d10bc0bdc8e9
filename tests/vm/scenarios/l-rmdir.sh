# l-rmdir (issue 4, rule 11): a v1 listener gets one last eventfd signal when its cgroup is
# removed (rmdir through the shadow tree), as cgroup v1 listeners noticed an rmdir, and no
# further one. A held memory.oom_control of the removed cgroup then reads ENODEV, as kernfs
# answers for any file of a removed cgroup (and the read must not bring the cgroup back into
# the daemon: a ghost the watcher would never remove).
# Also: a listener on a cgroup removed directly in the real tree gets the same signal (that
# listener registers from a second thread: the request carries a thread id, not the tgid).
# Figures: rmdir -> eventfd wake.
# timeout: 60
. /oomd/lib.sh
start_daemon /shadow
cg=$(mkcg g); s=/shadow${cg#$CGROOT}
setknob "$s" cgroup.subtree_control +memory
mkdir "$s/a" "$s/b" || fail "shadow mkdir"
rm -f /tmp/la.r /tmp/lb.r
v1listener "$s/a" --timeout 8000 --ready /tmp/la.r >/tmp/la.out 2>&1 &
LA=$!
v1listener "$s/b" --thread --timeout 8000 --ready /tmp/lb.r >/tmp/lb.out 2>&1 &
LB=$!
wait_for 5000 test -e /tmp/la.r -a -e /tmp/lb.r || fail "listeners did not register: $(cat /tmp/la.out /tmp/lb.out)"
exec 7<"$s/a/memory.oom_control"
usleep 200000
t0=$(odt now)
rmdir "$s/a" || fail "shadow rmdir a failed"
t1=$(odt now)
rmdir "$cg/b" || fail "real rmdir b failed"
t2=$(odt now)
wait_for 15000 sh -c "! kill -0 $LA 2>/dev/null && ! kill -0 $LB 2>/dev/null" || fail "listeners still running"
echo "a:"; cat /tmp/la.out; echo "b:"; cat /tmp/lb.out
na=$(grep -c '^signal' /tmp/la.out); nb=$(grep -c '^signal' /tmp/lb.out)
[ "$na" = 1 ] || fail "shadow rmdir: $na signals, not 1: $(cat /tmp/la.out)"
[ "$nb" = 1 ] || fail "real rmdir: $nb signals, not 1: $(cat /tmp/lb.out)"
grep -q '^signal 1 .* count=1 ' /tmp/la.out || fail "eventfd count not 1: $(cat /tmp/la.out)"
ga=$(sed -n 's/^signal 1 [0-9.]* count=[0-9]* //p' /tmp/la.out)
gb=$(sed -n 's/^signal 1 [0-9.]* count=[0-9]* //p' /tmp/lb.out)
ta=$(awk '/^signal 1 /{print $3}' /tmp/la.out); tb=$(awk '/^signal 1 /{print $3}' /tmp/lb.out)
# kernfs (v1 and v2) answers ENODEV on a read of an open file of a removed cgroup
usleep 300000
after=$(cat <&7 2>&1 | tr '\n' ',')
exec 7<&-
echo "read of a held memory.oom_control after the rmdir: $after"
case $after in *"No such device"*) ;; *) fail "a held memory.oom_control reads '$after' after the rmdir (kernfs: ENODEV)" ;; esac
dev=''
ls "$s/a" >/dev/null 2>&1 && fail "$s/a still listed after the rmdir and the late read"
# does anything of the daemon's keep the removed cgroups alive (dying)? compare before/after stop
usleep 1000000
dy0=$(cgkey "$cg/cgroup.stat" nr_dying_descendants)
stop_daemon
usleep 500000
dy1=$(cgkey "$cg/cgroup.stat" nr_dying_descendants)
[ "$dy0" = "$dy1" ] || dev="$dev; DEVIATION: $cg had $dy0 dying descendants while the daemon ran, $dy1 after it stopped (pinned by the daemon)"
pass "shadow rmdir: one signal $(awk -v a="$ta" -v t="$t0" -v u="$t1" 'BEGIN{printf "%.1f", a - t}') ms after rmdir started (rmdir took $(awk -v t="$t0" -v u="$t1" 'BEGIN{printf "%.1f", u - t}') ms), control file then: $ga;" \
	"real rmdir: one signal $(awk -v a="$tb" -v t="$t1" 'BEGIN{printf "%.1f", a - t}') ms after, control file then: $gb; held control file then ENODEV; dying descendants of the parent: $dy0 with the daemon, $dy1 after it$dev"
