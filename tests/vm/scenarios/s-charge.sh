# s-charge (issue 21, item 2): kernel memory a caller causes through the shadow is charged
# to the caller's cgroup, not the daemon's. Before, the daemon made the cgroups and set the
# user.* values itself, and the kernel charged its cgroup (6.12: 59.4 MiB on the daemon,
# 0.4 MiB on a tenant limited to 24 MiB). uid 1000, in a delegated cgroup t limited to
# 24 MiB (memory.max root's), makes up to 10 child cgroups through the shadow and sets two 64 KiB
# user.* values on every file it owns in them. Now the daemon's cgroup grows by under 4 MiB,
# and on 6.12 and 7 the tenant pays (its charge, its ENOMEM past its limit). 6.1 charges
# kernfs xattr values to no cgroup (simple_xattr_alloc without __GFP_ACCOUNT): there only
# the mkdirs move the tenant's figure. The legitimate actions beside: the tenant's cgroups
# exist and are its own, another tenant makes and labels a cgroup of its own, and a hog over
# L in a managed cgroup is killed on time afterwards.
# Figures: growth of the daemon's and the tenant's memory.current (and the tenant's peak),
# values set and refused, the kill's lateness.
# timeout: 240
. /oomd/lib.sh
start_daemon /shadow
dg=$(mkcg daemon)
for p in $(charge_parents); do # the daemon and its charge zygote
	echo "$p" >"$dg/cgroup.procs" || fail "cannot move $p (the daemon or its zygote) into $dg"
done
t=$(mkcg t)
echo $((24 * MiB)) >"$t/memory.max" || fail "memory.max of $t"
mkdir "$t/w" || fail "mkdir $t/w"
echo +memory >"$t/cgroup.subtree_control" || fail "+memory in $t"
delegate "$t" 1000
st=/shadow${t#$CGROOT}
cat "/shadow${dg#$CGROOT}/memory.current" >/dev/null # the daemon knows both first
cat "$st/memory.current" >/dev/null
odt sleep 1000
d0=$(current "$dg"); t0=$(current "$t")
sh -c "echo \$\$ >$t/w/cgroup.procs && exec odt asuser 1000 1000 sh -c '
	i=0
	while [ \$i -lt 10 ]; do
		mkdir $st/c\$i || { echo mkdir c\$i failed; exit 1; }
		xfill $st/c\$i 2 65536
		i=\$((i + 1))
	done'" >/tmp/attack.out 2>&1
odt sleep 1000
d1=$(current "$dg"); t1=$(current "$t")
tp=$(cat "$t/memory.peak" 2>/dev/null || echo "$t1")
alive "$DAEMON_PID" || fail "the daemon died: $(tail -n 5 /tmp/oomdelayfs.log)"
nset=$(awk '$1 == "set" { s += $2 } END { print s + 0 }' /tmp/attack.out)
nref=$(awk '$1 == "set" { s += $4 } END { print s + 0 }' /tmp/attack.out)
dd=$((d1 - d0)); td=$((t1 - t0)); tpd=$((tp - t0))
log "daemon +$(mib $dd) MiB, tenant +$(mib $td) MiB (peak +$(mib $tpd)), $nset values set, $nref refused"
# the attack ends where the tenant's limit does (its ENOMEM, or the OOM killer in its cgroup)
made=0
for c in "$t"/c*; do
	[ -d "$c" ] || continue
	[ "$(stat -c %u "$c")" = 1000 ] || fail "$c is not the tenant's: $(ls -ldn "$c")"
	made=$((made + 1))
done
[ "$made" -ge 1 ] || fail "the tenant made no cgroup: $(cat /tmp/attack.out)"
oomk=$(dmesg | grep -c "oom_memcg=${t#$CGROOT}[,/]")
log "the tenant made $made cgroups; OOM kills in its cgroup: $oomk; $(tr '\n' ' ' </tmp/attack.out)"
[ "$dd" -lt $((4 * MiB)) ] || fail "the daemon's cgroup grew by $(mib $dd) MiB for the tenant's $nset values (tenant +$(mib $td) MiB)"
if [ "$OOMD_KERNEL" != 6.1 ]; then
	[ "$tpd" -ge $((8 * MiB)) ] || fail "the tenant was charged only $(mib $tpd) MiB for $nset values of 64 KiB"
fi
[ "$t1" -le $((24 * MiB)) ] || fail "the tenant is over its limit: $(mib $t1) MiB"
# the legitimate actions beside
# (kernfs allows 128 KiB of user.* values per node: the attacker's nodes are full.) Another
# tenant, uid 1001 in its own delegated cgroup u, makes a cgroup and labels it.
u=$(mkcg u)
mkdir "$u/w" || fail "mkdir $u/w"
echo +memory >"$u/cgroup.subtree_control" || fail "+memory in $u"
delegate "$u" 1001
su=/shadow${u#$CGROOT}
o=$(sh -c "echo \$\$ >$u/w/cgroup.procs && exec odt asuser 1001 1001 sh -c 'mkdir $su/k && odt xattr set $su/k user.note hello && odt xattr get $su/k user.note'" 2>&1)
[ "$o" = hello ] || fail "uid 1001 could not make and label a cgroup beside the attack: '$o'"
[ "$(stat -c %u "$u/k")" = 1001 ] || fail "u/k is not uid 1001's: $(ls -ldn "$u/k")"
[ "$(odt xattr get "$u/k" user.note)" = hello ] || fail "the real tree lacks user.note"
# what a charged call costs: small values on k and its files, each call a fork into u/w
o=$(sh -c "echo \$\$ >$u/w/cgroup.procs && exec odt asuser 1001 1001 sh -c 'a=\$(odt now); xfill $su/k 4 16; b=\$(odt now); echo \$((b - a))'" 2>&1)
ncalls=$(echo "$o" | awk '$1 == "set" { print $2 + $4 + $6 }')
percall=$(echo "$o" | awk -v n="$ncalls" 'NR == 2 && n > 0 { printf "%.2f", $1 / n }')
log "uid 1001: $ncalls setxattr calls through the shadow: $(echo "$o" | tr '\n' ' ') -> $percall ms each"
# the attacker's removal of its own values gives its memory back
odt asuser 1000 1000 odt xattr rm "$st/c0" user.xfill.0 || fail "the attacker cannot remove its own value"
x=$(mkcg x); sx=/shadow${x#$CGROOT}
setknob "$sx" memory.max $((32 * MiB))
setknob "$sx" memory.oom_delay_millisecs 600
kl=$(killed_on_time "$x" "$sx")
stop_daemon
pass "daemon +$(mib $dd) MiB, tenant +$(mib $td) MiB (peak +$(mib $tpd)) for $made cgroups and" \
	"$nset values of 64 KiB set ($nref refused, $oomk OOM kills in the tenant's cgroup);" \
	"uid 1001's mkdir and user.note work ($percall ms per charged setxattr); kill +$kl ms"
