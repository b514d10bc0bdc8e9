# sd-install (issue 19): the package installed exactly as docs/CONTAINERS.md says (`apt install
# ./oomdelayfs_*.deb` on a host without network: the Depends are in the image; the other scenarios use dpkg -i; then systemctl enable --now oomdelayfs) on
# Debian 12 with systemd 252 as PID 1: the unit is active (Type=notify: ready), the mount at
# /run/oomdelayfs/shadow serves memory.oom_delay_millisecs in a cgroup, `oomdelayfs status`
# answers, and a hold works under systemd: in a delegated cgroup (a Delegate=yes unit, the way
# systemd gives an operator a subtree), L = 32M and T = 1500 ms written through the shadow, a hog
# over L is held (nothing killed before the deadline) and then killed by the kernel, and the
# journal has the hold's two records with their OOMD_* fields.
# Figures: dpkg -i and enable --now times, the hold, the kill's lateness, the journal's figures.
# timeout: 180
. /payload/lib.sh
L=$((32 * MiB)) T=1500 CEIL=$((64 * MiB))
sd_installed && fail "oomdelayfs is installed before the scenario began"
[ -e /run/oomdelayfs ] && fail "/run/oomdelayfs exists before the install"
SD_INSTALL_WITH=apt sd_install
[ "$(systemctl is-enabled oomdelayfs)" = enabled ] || fail "oomdelayfs.service is $(systemctl is-enabled oomdelayfs), not enabled"
[ "$(systemctl show -p Type --value oomdelayfs)" = notify ] || fail "the unit is not Type=notify"
mp=$(sd_mainpid)
[ "$mp" -gt 0 ] || fail "no main process"
[ "$(cat /proc/"$mp"/comm)" = oomdelayfs ] || fail "the main process is $(cat /proc/"$mp"/comm)"
# what the unit asks for is in force (issue 19: it was)
[ "$(cat /proc/"$mp"/oom_score_adj)" = -1000 ] || fail "oom_score_adj $(cat /proc/"$mp"/oom_score_adj), not -1000"
fds=$(systemctl show -p NFileDescriptorStore --value oomdelayfs 2>/dev/null)
st=$(oomdelayfs status 2>&1) || fail "oomdelayfs status exited $?: $st"
oomdelayfs status --json | jq -e . >/dev/null || fail "oomdelayfs status --json is not JSON"
oomdelayfs status --metrics | grep -q '^oomdelayfs_holds_started' || fail "oomdelayfs status --metrics has no oomdelayfs_holds_started: $(oomdelayfs status --metrics 2>&1 | head -n 3 | tr '\n' ' ')"
# the engines start after oomdelayfs (docs/OPERATIONS.md: `systemctl cat docker.service` shows the drop-in)
for u in docker containerd podman-restart; do
	systemctl cat "$u.service" | grep -qx 'After=oomdelayfs.service' || fail "systemctl cat $u.service shows no After=oomdelayfs.service"
	systemctl show -p After --value "$u.service" | grep -qw oomdelayfs.service || fail "$u.service is not ordered after oomdelayfs.service: $(systemctl show -p After --value "$u.service")"
done

# a cgroup tree the daemon serves
top=$(sd_cgtree install)
cg=$(mkcg "$top" d)
s=$(shadow_of "$cg")
[ -f "$s/memory.oom_delay_millisecs" ] || fail "$s/memory.oom_delay_millisecs is not there"
[ "$(cat "$s/memory.oom_delay_millisecs")" = 0 ] || fail "T reads $(cat "$s/memory.oom_delay_millisecs") in a new cgroup, not 0"
[ "$(cat "$s/memory.max")" = max ] || fail "shadow memory.max of a new cgroup reads $(cat "$s/memory.max")"
echo "$L" >"$s/memory.max" || fail "cannot write memory.max through the shadow"
echo "$T" >"$s/memory.oom_delay_millisecs" || fail "cannot write memory.oom_delay_millisecs"
[ "$(cat "$s/memory.max")" = "$L" ] || fail "shadow memory.max reads $(cat "$s/memory.max"), not L"
[ "$(cat "$s/memory.oom_delay_millisecs")" = "$T" ] || fail "T reads $(cat "$s/memory.oom_delay_millisecs")"
# in force before the write returned (issue 19 item 5): the real ceiling and L as memory.high
[ "$(cat "$cg/memory.max")" = $((L + CEIL)) ] || fail "real memory.max is $(cat "$cg/memory.max") after the writes, not L + ceiling"
[ "$(cat "$cg/memory.high")" = "$L" ] || fail "real memory.high is $(cat "$cg/memory.high"), not L"

# the hold
k0=$(evkey "$cg" oom_kill)
kill_watch "$cg"
start_hog "$cg" 256
wait_for 30000 under_oom "$s" || fail "no hold within 30 s (usage $(current "$cg"), real max $(cat "$cg/memory.max"), events $(tr '\n' ' ' <"$cg/memory.events"))"
dlns=$(deadline_ns "$cg")
dl=$((dlns / 1000000))
held_until "$dl" "$cg" "$k0" "$HOG_PID"
wait_for 5000 dead "$HOG_PID" || fail "the hog is alive 5 s after the deadline"
[ "$(evkey "$cg" oom_kill)" -gt "$k0" ] || fail "the hog died but the kernel's oom_kill did not move"
kl=$(kill_late "$cg" "$dlns")
awk -v l="$kl" 'BEGIN { exit !(l < 2000) }' || fail "the kill came $kl ms after the deadline (watcher: $(cat /run/oomd-sd/kw.d); deadline $dlns ns, state: $(odt xattr get "$cg" trusted.oomdelayfs.state 2>&1); now boottime $(pressure now) ms, monotonic $(odt now) ms)"
[ "$(cat "$s/memory.oom_delay_millisecs")" = 0 ] || fail "T reads $(cat "$s/memory.oom_delay_millisecs") after the hold, not 0"

# the journal: one hold started, one ended, of this cgroup
start=$(sd_wait_record 5000 "$MSG_HOLD_START" CGROUP="$cg") || fail "no hold-started record for $cg in the journal"
end=$(sd_wait_record 5000 "$MSG_HOLD_END" CGROUP="$cg") || fail "no hold-ended record for $cg in the journal (started: $start)"
ns=$(sd_records "$MSG_HOLD_START" CGROUP="$cg" | wc -l)
ne=$(sd_records "$MSG_HOLD_END" CGROUP="$cg" | wc -l)
[ "$ns" = 1 ] && [ "$ne" = 1 ] || fail "$ns hold-started and $ne hold-ended records for one hold"
for f in OOMD_HOLD_ID OOMD_LIMIT OOMD_USAGE OOMD_DEADLINE_IN_MS OOMD_DISABLE; do
	[ -n "$(sd_field "$start" "$f")" ] || fail "hold-started record without $f: $start"
done
for f in OOMD_HOLD_ID OOMD_END OOMD_HELD_MS OOMD_LISTENERS OOMD_KILL_LATENESS_MS; do
	[ -n "$(sd_field "$end" "$f")" ] || fail "hold-ended record without $f: $end"
done
[ "$(sd_field "$start" OOMD_HOLD_ID)" = "$(sd_field "$end" OOMD_HOLD_ID)" ] || fail "the records' hold ids differ: $start / $end"
[ "$(sd_field "$start" OOMD_LIMIT)" = "$L" ] || fail "OOMD_LIMIT is $(sd_field "$start" OOMD_LIMIT), not $L"
[ "$(sd_field "$end" OOMD_END)" = kill-kernel ] || fail "OOMD_END=$(sd_field "$end" OOMD_END), not kill-kernel"
held=$(sd_field "$end" OOMD_HELD_MS)
# the operator's own queries, as docs/OPERATIONS.md gives them (the whole journal, no cursor)
n=$(journalctl -u oomdelayfs MESSAGE_ID="$MSG_HOLD_END" OOMD_END=kill-kernel -o json |
	jq -r --arg c "$cg" 'select(.CGROUP == $c) | .OOMD_HOLD_ID' | wc -l)
[ "$n" = 1 ] || fail "journalctl -u oomdelayfs MESSAGE_ID=$MSG_HOLD_END OOMD_END=kill-kernel shows $n records of $cg, not 1"
n=$(journalctl -u oomdelayfs CGROUP="$cg" -o verbose | grep -c "MESSAGE_ID=")
[ "$n" = 2 ] || fail "journalctl -u oomdelayfs CGROUP=$cg -o verbose shows $n records with a MESSAGE_ID, not 2"
pass "apt install ./deb ${INSTALL_MS} ms, enable --now until active ${READY_MS} ms, fd store $fds;" \
	"held to the deadline, kernel's kill seen $kl ms after it; journal: OOMD_HELD_MS=$held" \
	"OOMD_KILL_LATENESS_MS=$(sd_field "$end" OOMD_KILL_LATENESS_MS) OOMD_DEADLINE_IN_MS=$(sd_field "$start" OOMD_DEADLINE_IN_MS)"
