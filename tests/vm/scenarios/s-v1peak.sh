# s-v1peak (issue 21, deliverable 4, round three; --layout v1): a max_usage reset keeps a
# descriptor of the daemon's for the cgroup's life (6.12+: memory.peak resets per open file;
# memory.swap.peak for the memsw file), and a delegated tenant owns the memory.max, so the
# reset right, of every child it makes. uid 1000 makes 100 children in its box on the real
# tree (cheap) and resets max_usage_in_bytes and memsw.max_usage_in_bytes of each through the
# shadow: before round three the daemon kept 2 descriptors per child, none counted (200 here;
# a tenant with 2,000 children took a daemon whose RLIMIT_NOFILE is 4,096 into the kill path's
# reserve). Now 128 of one principal are kept (FS_V1_PEAKS_PER_PRINCIPAL), the next reset is
# ENOMEM and keeps nothing. Beside it: the tenant's first resets work (max_usage reads the new
# watermark, not the old one), root's reset of its own cgroup r works past the tenant's share,
# and when the tenant removes its children every kept descriptor of theirs is closed.
# On 6.1 (memory.peak cannot be reset: nothing is kept) the scenario checks that nothing is.
# Figures: descriptors kept for the tenant, its first refusal, after the rmdir.
# timeout: 120
. /oomd/lib.sh
start_daemon /shadow --layout v1
U=1000
K=100
as() { odt asuser "$U" "$U" "$@"; }
kept() { ls -l "/proc/$DAEMON_PID/fd" 2>/dev/null | grep -c 'memory\.\(swap\.\)\?peak$'; }
box=$(mkcg box); sbox=/shadow${box#$CGROOT}
r=$(mkcg r); sr=/shadow${r#$CGROOT}
delegate "$box" "$U"
as sh -c "echo +memory >$box/cgroup.subtree_control" || fail "the tenant cannot enable memory in its box"
as sh -c "i=0; while [ \$i -lt $K ]; do mkdir $box/t\$i || exit 1; i=\$((i + 1)); done" ||
	fail "the tenant cannot make $K children"
k0=$(kept)
# a watermark to reset: the tenant's t0 held 8 MiB once
odt hog 8 --cgroup "$box/t0" --exit || fail "hog in t0"
old=$(cat "$sbox/t0/memory.max_usage_in_bytes")
resettable=0
[ "$(uname -r | cut -d. -f1-2)" != 6.1 ] && resettable=1
# the tenant resets all of them: "<i> <errno of max_usage> <errno of memsw.max_usage>" per child
as sh -c "i=0; while [ \$i -lt $K ]; do
	a=ok; b=ok
	echo 0 >$sbox/t\$i/memory.max_usage_in_bytes 2>/tmp/e1 || a=\$(cat /tmp/e1)
	if [ -e $sbox/t\$i/memory.memsw.max_usage_in_bytes ]; then
		echo 0 >$sbox/t\$i/memory.memsw.max_usage_in_bytes 2>/tmp/e2 || b=\$(cat /tmp/e2)
	else b=none; fi
	echo \"\$i|\$a|\$b\"; i=\$((i + 1)); done" >/tmp/resets.out 2>&1
k1=$(kept)
refused=$(grep -c 'Cannot allocate memory' /tmp/resets.out)
first=$(grep -m1 'Cannot allocate memory' /tmp/resets.out | cut -d'|' -f1)
other=$(grep -v '|ok|ok$\||ok|none$' /tmp/resets.out | grep -vc 'Cannot allocate memory')
log "kept before $k0, after the tenant's resets $k1; refused $refused (first at t$first); other answers $other"
[ "$other" = 0 ] || fail "resets answered other than ok/ENOMEM: $(grep -v '|ok|ok$\||ok|none$' /tmp/resets.out | grep -v 'Cannot allocate' | head -3 | tr '\n' ';')"
new=$(cat "$sbox/t0/memory.max_usage_in_bytes")
if [ "$resettable" = 1 ]; then
	[ $((k1 - k0)) -le 128 ] || fail "the daemon keeps $((k1 - k0)) descriptors for the tenant's resets (its share is 128)"
	[ $((k1 - k0)) -ge 100 ] || fail "only $((k1 - k0)) resets kept: the tenant's share is not 128"
	[ "$refused" -gt 0 ] || fail "no reset of the tenant's was refused"
	[ "$new" -lt "$old" ] || fail "t0's max_usage after the tenant's reset: $new (before $old): not reset"
	# root beside it, past the tenant's share
	odt hog 8 --cgroup "$r" --exit || fail "hog in r"
	rold=$(cat "$sr/memory.max_usage_in_bytes")
	echo 0 >"$sr/memory.max_usage_in_bytes" || fail "root's reset of r refused beside the tenant's 128"
	rnew=$(cat "$sr/memory.max_usage_in_bytes")
	[ "$rnew" -lt "$rold" ] || fail "r's max_usage after root's reset: $rnew (before $rold)"
	[ "$(kept)" -eq $((k1 + 1)) ] || fail "root's reset kept $(($(kept) - k1)) descriptors, not 1"
else
	[ "$k1" = "$k0" ] || fail "6.1 cannot reset memory.peak, yet the daemon keeps $((k1 - k0)) descriptors"
	[ "$refused" = 0 ] || fail "6.1: $refused resets refused (nothing is kept there)"
fi
# the tenant removes its children: their kept descriptors are closed
as sh -c "i=0; while [ \$i -lt $K ]; do rmdir $box/t\$i || exit 1; i=\$((i + 1)); done" ||
	fail "the tenant cannot remove its children"
_gone() { [ "$(kept)" -le $((k0 + resettable)) ]; }
wait_for 10000 _gone || fail "10 s after the rmdir the daemon still keeps $(kept) peak descriptors (before: $k0)"
k2=$(kept)
alive "$DAEMON_PID" || fail "the daemon died"
stop_daemon
pass "kernel $(uname -r): uid $U's resets of $K children kept $((k1 - k0)) descriptors, $refused refused" \
	"(ENOMEM from t${first:-none}); t0 reset ($old -> $new); root's reset of r beside: ${rold:-n/a} -> ${rnew:-n/a};" \
	"after the rmdir $k2 kept (before $k0)"
