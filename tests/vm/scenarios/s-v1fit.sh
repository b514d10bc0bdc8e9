# s-v1fit (issue 21, deliverable 4, round three; --layout v1): a limit below the usage is v1's
# mem_cgroup_resize_max(): reclaim towards it, EBUSY after 16 rounds without progress. The
# shadow's rounds (memory.reclaim, on a FUSE worker) counted only rounds without progress, so a
# workload that faults its pages back as fast as they are reclaimed kept the write, and the
# worker, going for as long as it ran (v1 stops at the writer's signal; a FUSE worker gets
# none). uid 1000 owns child f of its box (it made it), runs two 96 MiB hogs there that write
# every page again in a loop (odt hog --retouch), with swap, and writes f's
# memory.limit_in_bytes 4M through the shadow. (A first version, one hog and 16M, did not
# reproduce the loop under TCG: the write succeeded in 1.1 s on 6.12, the usage having fallen
# under 16 MiB between two rounds.) Now no round starts 2 s after the first: the
# write answers EBUSY and f's limit is unchanged (v1's answer when it gives up). Beside it:
# root reads another cgroup's v1 files during the write, and once the hog is gone the
# tenant's same write succeeds.
# Figures: how long the write took and what it answered, root's read meanwhile.
# disk: swap
# timeout: 120
. /oomd/lib.sh
swap_on
start_daemon /shadow --layout v1
U=1000
as() { odt asuser "$U" "$U" "$@"; }
box=$(mkcg box); sbox=/shadow${box#$CGROOT}
r=$(mkcg r); sr=/shadow${r#$CGROOT}
delegate "$box" "$U"
as sh -c "echo +memory >$box/cgroup.subtree_control && mkdir $box/f" || fail "the tenant cannot make f"
odt hog 96 --cgroup "$box/f" --retouch &
HP=$!
odt hog 96 --cgroup "$box/f" --retouch &
HP2=$!
_filled() { [ "$(cat "$box/f/memory.current")" -gt $((160 * MiB)) ]; }
wait_for 30000 _filled || fail "the hogs did not reach 160 MiB in 30 s: $(cat "$box/f/memory.current")"
lim0=$(cat "$sbox/f/memory.limit_in_bytes")
t0=$(now_ms)
as timeout 20 odt write "$sbox/f/memory.limit_in_bytes" $((4 * MiB)) >/tmp/fit.out 2>&1 &
WP=$!
usleep 500000
rt0=$(now_ms)
cat "$sr/memory.usage_in_bytes" "$sr/memory.stat" >/dev/null || fail "root cannot read r's v1 files during the write"
rms=$(($(now_ms) - rt0))
wait "$WP"
wrc=$?
wms=$(($(now_ms) - t0))
ans=$(cat /tmp/fit.out)
log "the tenant's write: rc $wrc after $wms ms: $ans; root's read meanwhile $rms ms"
[ "$wrc" -ne 124 ] && [ "$wrc" -ne 143 ] || fail "the tenant's limit write had not answered after 20 s (a FUSE worker held as long as the hog runs): $ans"
case $ans in
*"Device or resource busy"*)
	alive "$HP" && alive "$HP2" || fail "a hog died (a limit write that gives up must not kill: v1's EBUSY)"
	[ "$(cat "$sbox/f/memory.limit_in_bytes")" = "$lim0" ] || fail "after EBUSY f's limit is $(cat "$sbox/f/memory.limit_in_bytes"), not $lim0" ;;
[0-9]*) log "the write succeeded (usage fell under 4 MiB between rounds)" ;;
*) fail "the tenant's write answered '$ans'" ;;
esac
[ "$wms" -lt 15000 ] || fail "the tenant's write took $wms ms"
kill "$HP" "$HP2"
wait "$HP" "$HP2" 2>/dev/null
_empty() { [ "$(cat "$box/f/memory.current")" -lt $((8 * MiB)) ]; }
wait_for 10000 _empty || fail "f still holds $(cat "$box/f/memory.current") bytes after the hog"
o=$(as odt write "$sbox/f/memory.limit_in_bytes" $((16 * MiB)) 2>&1) || fail "the tenant's write after the hog: $o"
[ "$(cat "$sbox/f/memory.limit_in_bytes")" = $((16 * MiB)) ] || fail "f's limit after the write: $(cat "$sbox/f/memory.limit_in_bytes")"
alive "$DAEMON_PID" || fail "the daemon died"
stop_daemon
pass "the tenant's 4 MiB limit write under two retouching 96 MiB hogs answered in $wms ms: $(echo "$ans" | tr '\n' ' ');" \
	"root's read meanwhile $rms ms; without the hog the same write set 16 MiB"
