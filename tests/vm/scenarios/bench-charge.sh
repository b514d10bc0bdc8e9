# bench-charge (benchmark, not a test; runs only when named): what a charged call costs
# (fs/charge.h: a tenant's mkdir and setxattr through the shadow run in a child placed in the
# tenant's cgroup; since issue 21's orphan finding that child is the charge zygote's,
# fs/zygote.h). uid 1001, in its own delegated cgroup, makes N cgroups through the shadow
# with one mkdir(1) process (N calls), then sets small user.* values with one xfill process
# on one of its cgroups and the files it owns there; the same on the real tree beside (the
# floor: no FUSE, no child). Prints one BENCH line per call and tree (mean ms per call) and
# the daemon's and the zygote's descriptor and thread counts.
# timeout: 600
. /oomd/lib.sh
N=${OOMD_BENCH_CHARGED:-60}
start_daemon /shadow
u=$(mkcg u)
mkdir "$u/w" || fail "mkdir $u/w"
echo +memory >"$u/cgroup.subtree_control" || fail "+memory in $u"
delegate "$u" 1001
su=/shadow${u#$CGROOT}
ls "$su" >/dev/null || fail "the shadow does not show $su"
# as1001 CMD: CMD as uid 1001 in u/w
as1001() { sh -c "echo \$\$ >$u/w/cgroup.procs && exec odt asuser 1001 1001 sh -c '$1'"; }
# mkdirs TREE TAG: N mkdirs under TREE by one process; prints the ms
mkdirs() {
	_l=''; _i=0
	while [ $_i -lt "$N" ]; do _l="$_l $1/$2$_i"; _i=$((_i + 1)); done
	as1001 "a=\$(odt now); mkdir $_l || exit 1; b=\$(odt now); echo \$((b - a))"
}
# xattrs DIR: small values on DIR and the files it owns there, by one process; prints "ms calls"
xattrs() {
	as1001 "a=\$(odt now); o=\$(xfill $1 4 16); b=\$(odt now); echo \$((b - a)) \$o"
}
for round in 1 2; do
	ms=$(mkdirs "$su" "s$round") || fail "uid 1001's mkdirs through the shadow failed"
	rs=$(mkdirs "$u" "r$round") || fail "uid 1001's mkdirs on the real tree failed"
	log "round $round: $N mkdirs through the shadow $ms ms, on the real tree $rs ms"
done
xs=$(xattrs "$su/s20"); xr=$(xattrs "$u/r20")
log "setxattr through the shadow: $xs; on the real tree: $xr"
xn=$(echo "$xs" | awk '{ print $3 }'); xrn=$(echo "$xr" | awk '{ print $3 }')
[ "${xn:-0}" -gt 0 ] && [ "${xrn:-0}" -gt 0 ] || fail "no value set: shadow '$xs', real '$xr'"
echo "BENCH $OOMD_KERNEL charged-mkdir shadow $(awk -v t="$ms" -v n="$N" 'BEGIN { printf "%.2f", t / n }') ms real $(awk -v t="$rs" -v n="$N" 'BEGIN { printf "%.2f", t / n }') ms (N=$N, second round)"
echo "BENCH $OOMD_KERNEL charged-setxattr shadow $(echo "$xs" | awk '{ printf "%.2f", $1 / $3 }') ms real $(echo "$xr" | awk '{ printf "%.2f", $1 / $3 }') ms (N=$xn, $xrn)"
zy=$(charge_parents | sed 1d | tr '\n' ' ')
info="the daemon: $(ls "/proc/$DAEMON_PID/fd" | wc -l) descriptors, $(ls "/proc/$DAEMON_PID/task" | wc -l) threads"
for z in $zy; do info="$info; its child $z ($(cat "/proc/$z/comm")): $(ls "/proc/$z/fd" | wc -l) descriptors, VmRSS $(awk '$1 == "VmRSS:" { print $2 " " $3 }' "/proc/$z/status")"; done
log "$info"
stop_daemon
pass "mkdir $(awk -v t="$ms" -v n="$N" 'BEGIN { printf "%.2f", t / n }') ms per call through the shadow" \
	"(real $(awk -v t="$rs" -v n="$N" 'BEGIN { printf "%.2f", t / n }')), setxattr $(echo "$xs" | awk '{ printf "%.2f", $1 / $3 }') ms" \
	"(real $(echo "$xr" | awk '{ printf "%.2f", $1 / $3 }')); $info"
