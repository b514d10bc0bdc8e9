#!/bin/sh
# sd-lpriv (issue 21, deliverable 5): the unit's least privilege, as systemd 252 applies it.
# `systemd-analyze security oomdelayfs.service` (printed: the exposure score, at most
# MAX_EXPOSURE, and what is left open); `systemctl show` has what the unit file says
# (CapabilityBoundingSet, NoNewPrivileges, LockPersonality, MemoryDenyWriteExecute,
# ProtectClock, ProtectHostname, DevicePolicy, DeviceAllow, RestrictAddressFamilies,
# SystemCallFilter, IPAddressDeny); the daemon's /proc/PID/status has that bounding set and
# effective set, NoNewPrivs 1, Seccomp 2; it shares PID 1's mount namespace (the FUSE mount is
# the host's) and has a UTS namespace of its own. Then, under these restrictions: a thread of it
# runs SCHED_FIFO (the deadline thread, --rt-priority 1); uid 1000's charged mkdir and setxattr
# in a cgroup delegated to it; a kernel-mode kill (memory.max
# written back, the kill guard) at the deadline; `systemctl restart` with metrics-port and
# kill-mode = group in the configuration: the daemon asks systemd over D-Bus and hands the same
# mount to its successor; the metrics port answers on 127.0.0.1 (IPAddressAllow=localhost); a
# group-mode kill (cgroup.kill, no CAP_KILL) of a uid 1000 hog at the deadline; the daemon
# logged no warning (a missing privilege warns: mlockall, oom_score_adj, setpriority,
# SCHED_FIFO, RLIMIT_NOFILE) and systemd none about the unit.
# Figures: the exposure score (and the time systemd-analyze took), the two kills' lateness.
# timeout: 300
. /payload/lib.sh
# docs/SECURITY.md gives the unit's score; a change that loosens the unit fails here
MAX_EXPOSURE=6.1
L=$((32 * MiB)) T=1500 PORT=9464
sd_install
mp=$(sd_mainpid)
[ "$mp" -gt 0 ] || fail "no main process"
unit=$(systemctl show -p FragmentPath --value oomdelayfs)

# systemd-analyze security, as an operator runs it
t0=$(now_ms)
sec=$(systemd-analyze security --no-pager oomdelayfs.service 2>&1)
sec_ms=$(($(now_ms) - t0))
echo "$sec"
score=$(echo "$sec" | sed -n 's/.*Overall exposure level for oomdelayfs\.service: \([0-9.]*\).*/\1/p')
[ -n "$score" ] || fail "no exposure level in systemd-analyze security's output: $(echo "$sec" | tail -n 3)"
awk -v s="$score" -v m="$MAX_EXPOSURE" 'BEGIN { exit !(s <= m) }' ||
	fail "exposure $score, above $MAX_EXPOSURE"
nopen=$(echo "$sec" | grep -c '^✗')

# what the unit file says is what systemd applies
want_caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$unit" | tr ' ' '\n' | tr '[:upper:]' '[:lower:]' | sort | tr '\n' ' ')
have_caps=$(systemctl show -p CapabilityBoundingSet --value oomdelayfs | tr ' ' '\n' | sort | tr '\n' ' ')
[ -n "$want_caps" ] && [ "$want_caps" = "$have_caps" ] ||
	fail "CapabilityBoundingSet: the unit says '$want_caps', systemctl show '$have_caps'"
for kv in NoNewPrivileges=yes LockPersonality=yes MemoryDenyWriteExecute=yes ProtectClock=yes \
	ProtectHostname=yes DevicePolicy=closed; do
	v=$(systemctl show -p "${kv%%=*}" --value oomdelayfs)
	[ "$v" = "${kv#*=}" ] || fail "systemctl show ${kv%%=*}: '$v', not '${kv#*=}'"
done
systemctl show -p DeviceAllow --value oomdelayfs | grep -q '/dev/fuse rw' ||
	fail "DeviceAllow has no /dev/fuse rw: $(systemctl show -p DeviceAllow oomdelayfs | tr '\n' ' ')"
af=$(systemctl show -p RestrictAddressFamilies --value oomdelayfs | tr ' ' '\n' | sort | tr '\n' ' ')
[ "$af" = "AF_INET AF_UNIX " ] || fail "RestrictAddressFamilies: '$af'"
scf=$(systemctl show -p SystemCallFilter --value oomdelayfs)
case "$scf" in "~"*) ;; *) fail "SystemCallFilter is not a deny list: $(echo "$scf" | cut -c1-200)" ;; esac
for c in swapon reboot settimeofday init_module ptrace; do
	echo "$scf" | tr ' ~' '\n\n' | grep -qx "$c" || fail "SystemCallFilter does not deny $c"
done
for c in pidfd_getfd clone3 setns mount setfsuid open_by_handle_at sched_setscheduler; do
	echo "$scf" | tr ' ~' '\n\n' | grep -qx "$c" && fail "SystemCallFilter denies $c, which the daemon uses"
done
[ -n "$(systemctl show -p IPAddressDeny --value oomdelayfs)" ] || fail "no IPAddressDeny in force"

# ... and what the daemon has
caps_of() { # caps_of HEXMASK: the capability names of a mask, sorted, space-separated
	awk -v m="$1" 'BEGIN {
		split("chown dac_override dac_read_search fowner fsetid kill setgid setuid setpcap " \
		      "linux_immutable net_bind_service net_broadcast net_admin net_raw ipc_lock " \
		      "ipc_owner sys_module sys_rawio sys_chroot sys_ptrace sys_pacct sys_admin " \
		      "sys_boot sys_nice sys_resource sys_time sys_tty_config mknod lease " \
		      "audit_write audit_control setfcap mac_override mac_admin syslog wake_alarm " \
		      "block_suspend audit_read perfmon bpf checkpoint_restore", n, " ")
		for (i = length(m); i >= 1; i--) {
			d = index("0123456789abcdef", tolower(substr(m, i, 1))) - 1
			for (b = 0; b < 4; b++) if (int(d / 2 ^ b) % 2) print "cap_" n[(length(m) - i) * 4 + b + 1]
		}
	}' | sort | tr '\n' ' '
}
st=/proc/$mp/status
for f in CapBnd CapEff; do
	c=$(caps_of "$(awk -v f="$f:" '$1 == f { print $2 }' "$st")")
	[ "$c" = "$want_caps" ] || fail "the daemon's $f: '$c', not the unit's '$want_caps'"
done
[ "$(awk '$1 == "NoNewPrivs:" { print $2 }' "$st")" = 1 ] || fail "NoNewPrivs is not 1: $(grep NoNewPrivs "$st")"
[ "$(awk '$1 == "Seccomp:" { print $2 }' "$st")" = 2 ] || fail "no seccomp filter: $(grep Seccomp "$st")"
[ "$(readlink /proc/"$mp"/ns/mnt)" = "$(readlink /proc/1/ns/mnt)" ] ||
	fail "the daemon has a mount namespace of its own ($(readlink /proc/"$mp"/ns/mnt)): its mount is not the host's"
[ "$(readlink /proc/"$mp"/ns/uts)" != "$(readlink /proc/1/ns/uts)" ] ||
	fail "ProtectHostname=yes gave no UTS namespace"
fuse_mounted "$SHADOW" || fail "$SHADOW is not a FUSE mount in PID 1's namespace"

# a kernel-mode kill: L, T through the shadow, a hog held to the deadline, memory.max written back
top=$(sd_cgtree lpriv)
cg=$(mkcg "$top" k)
s=$(shadow_of "$cg")
echo "$L" >"$s/memory.max" || fail "cannot write memory.max through the shadow"
echo "$T" >"$s/memory.oom_delay_millisecs" || fail "cannot write memory.oom_delay_millisecs"
k0=$(evkey "$cg" oom_kill)
kill_watch "$cg"
start_hog "$cg" 256
wait_for 30000 under_oom "$s" || fail "no hold within 30 s (usage $(current "$cg"), events $(tr '\n' ' ' <"$cg/memory.events"))"
dlns=$(deadline_ns "$cg")
held_until $((dlns / 1000000)) "$cg" "$k0" "$HOG_PID"
wait_for 5000 dead "$HOG_PID" || fail "the hog is alive 5 s after the deadline"
[ "$(evkey "$cg" oom_kill)" -gt "$k0" ] || fail "the hog died but the kernel's oom_kill did not move"
kl1=$(kill_late "$cg" "$dlns")
awk -v l="$kl1" 'BEGIN { exit !(l < 2000) }' || fail "the kernel-mode kill came $kl1 ms after the deadline"
end=$(sd_wait_record 5000 "$MSG_HOLD_END" CGROUP="$cg") || fail "no hold-ended record for $cg"
[ "$(sd_field "$end" OOMD_END)" = kill-kernel ] || fail "OOMD_END=$(sd_field "$end" OOMD_END), not kill-kernel"
# a charged mkdir and setxattr (made by the charge zygote's child in the caller's cgroup,
# clone3 CLONE_INTO_CGROUP) by uid 1000 in a cgroup delegated to it
d=$(mkcg "$top" d)
chown 1000:1000 "$d" "$d/cgroup.procs" "$d/cgroup.subtree_control" "$d/cgroup.threads" || fail "cannot delegate $d"
sdd=$(shadow_of "$d")
o=$(sh -c "echo \$\$ >$d/cgroup.procs && exec setpriv --reuid=1000 --regid=1000 --clear-groups sh -c 'mkdir $sdd/c && odt xattr set $sdd/c user.note hi && odt xattr get $sdd/c user.note'" 2>&1)
[ "$o" = hi ] || fail "uid 1000 could not make and label a cgroup through the shadow: '$o'"
[ "$(stat -c %u "$d/c")" = 1000 ] || fail "$d/c is not uid 1000's: $(ls -ldn "$d/c")"
# the deadline thread has run since: it is SCHED_FIFO at --rt-priority (1)
ps -L -o cls=,rtprio= -p "$mp" | grep -qE '^ *FF +1$' ||
	fail "no SCHED_FIFO thread at priority 1 in the daemon: $(ps -L -o tid=,cls=,rtprio=,comm= -p "$mp" | tr '\n' ';')"

# systemctl restart with the metrics port and group kills configured (docs/OPERATIONS.md)
MOUNT_ID=$(sd_mount_id)
conf=/etc/oomdelayfs/oomdelayfs.conf
printf 'metrics-port = %s\nkill-mode = group\n' "$PORT" >>"$conf" || fail "cannot append to $conf"
t0=$(now_ms)
systemctl restart oomdelayfs >/run/oomd-sd/restart.log 2>&1 || { cat /run/oomd-sd/restart.log; fail "systemctl restart failed"; }
wait_for 30000 sd_active || fail "not active 30 s after systemctl restart"
mp2=$(sd_mainpid)
[ "$mp2" != "$mp" ] || fail "systemctl restart left the same main process"
[ "$(sd_mount_id)" = "$MOUNT_ID" ] || fail "the shadow is another mount after the restart: $MOUNT_ID -> $(sd_mount_id)"
[ -n "$(sd_journal_at_ms '^SIGTERM in a restart job')" ] ||
	fail "the daemon did not find the restart job over D-Bus: $(sd_journal | jq -r '.MESSAGE | strings' | grep -i sigterm | tail -n 2)"
m=$(bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT && printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3 && timeout 10 cat <&3" 2>&1)
echo "$m" | head -n 1 | grep -q ' 200' && echo "$m" | grep -q '^oomdelayfs_holds_started' ||
	fail "the metrics port on 127.0.0.1:$PORT: $(echo "$m" | head -n 3 | tr '\r\n' '  ')"

# a group-mode kill (cgroup.kill) of another uid's hog: no CAP_KILL needed
g=$(mkcg "$top" g)
sg=$(shadow_of "$g")
echo "$L" >"$sg/memory.max" || fail "cannot write memory.max through the shadow ($g)"
echo "$T" >"$sg/memory.oom_delay_millisecs" || fail "cannot write memory.oom_delay_millisecs ($g)"
k0=$(evkey "$g" oom_kill)
HOG_REPORT=/run/oomd-sd/hog.lpriv.g
: >"$HOG_REPORT" && chown 1000 "$HOG_REPORT" || fail "cannot make $HOG_REPORT uid 1000's"
sh -c "echo \$\$ >$g/cgroup.procs && exec setpriv --reuid=1000 --regid=1000 --clear-groups odt hog 256 --report $HOG_REPORT" &
HOG_PID=$!
wait_for 30000 under_oom "$sg" || fail "no hold in $g within 30 s (usage $(current "$g"))"
# watched once the hog is in it (--emptied: populated 0, which an empty cgroup is at once)
pressure killwatch "$g" 0 --timeout 600000 --emptied >"/run/oomd-sd/kw.$(basename "$g")" 2>&1 &
[ "$(awk '$1 == "Uid:" { print $2 }' /proc/"$HOG_PID"/status)" = 1000 ] || fail "the hog is not uid 1000's"
dlns=$(deadline_ns "$g")
held_until $((dlns / 1000000)) "$g" "$k0" "$HOG_PID"
wait_for 5000 dead "$HOG_PID" || fail "uid 1000's hog is alive 5 s after the deadline (group mode)"
kl2=$(kill_late "$g" "$dlns")
awk -v l="$kl2" 'BEGIN { exit !(l < 2000) }' || fail "the group-mode kill came $kl2 ms after the deadline"
end=$(sd_wait_record 5000 "$MSG_HOLD_END" CGROUP="$g") || fail "no hold-ended record for $g"
[ "$(sd_field "$end" OOMD_END)" = kill-group ] || fail "OOMD_END=$(sd_field "$end" OOMD_END), not kill-group"

# no warning from the daemon (a missing privilege warns) nor from systemd about the unit
w=$(sd_journal | jq -r 'select((.PRIORITY // "6" | tonumber) <= 4) | "\(._COMM // "?"): \(.MESSAGE)"' | head -n 5)
[ -z "$w" ] || fail "warnings in the unit's journal: $(echo "$w" | tr '\n' ';')"
sd_leave_clean
pass "systemd-analyze security: exposure $score ($nopen items open; ${sec_ms} ms); bounding set = effective" \
	"= the unit's $(echo "$want_caps" | wc -w) capabilities, NoNewPrivs, seccomp, PID 1's mount namespace;" \
	"kernel-mode kill +$kl1 ms; uid 1000's charged mkdir + user.* label; restart handed over (D-Bus); metrics on 127.0.0.1:$PORT; group kill of uid 1000's hog +$kl2 ms"
