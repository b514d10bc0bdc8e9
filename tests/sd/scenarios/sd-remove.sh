# sd-remove (issue 19): remove, then purge, the way an operator does (dpkg -r, dpkg --purge)
# while a cgroup is held: the remove stops the unit (the daemon asks systemd, which answers a
# stop job, not a restart), which hands every cgroup back to the kernel (real memory.max = L
# again, memory.high the user's, the state xattr gone; the held hog then killed by the kernel
# at L) and unmounts /run/oomdelayfs/shadow; no process of the unit
# is left; the purge leaves no file of the package, no configuration, no enablement link and
# nothing under /run/oomdelayfs.
# Cgroups (in a Delegate=yes unit): h, L = 32M, T = 60 s, a hog held; i, L = 32M, T = 30 s, idle.
# Figures: dpkg -r and --purge times, how long the held hog outlived the remove.
# timeout: 180
. /payload/lib.sh
L=$((32 * MiB))
sd_install
files=$(dpkg -L oomdelayfs | while read -r f; do [ -d "$f" ] || echo "$f"; done)
top=$(sd_cgtree remove)
for n in h i; do
	cg=$(mkcg "$top" "$n")
	echo "$L" >"$(shadow_of "$cg")/memory.max" || fail "cannot write memory.max of $n through the shadow"
done
echo 60000 >"$(shadow_of "$top/h")/memory.oom_delay_millisecs" || fail "cannot write T of h"
echo 30000 >"$(shadow_of "$top/i")/memory.oom_delay_millisecs" || fail "cannot write T of i"
start_hog "$top/h" 200
wait_for 30000 under_oom "$(shadow_of "$top/h")" || fail "h: no hold within 30 s"
for n in h i; do
	odt xattr get "$top/$n" trusted.oomdelayfs.state >/dev/null 2>&1 || fail "$n: no persisted state while managed"
	[ "$(cat "$top/$n/memory.max")" != "$L" ] || fail "$n: real memory.max is L while managed"
done
mp=$(sd_mainpid)

t0=$(now_ms)
dpkg -r oomdelayfs >/run/oomd-sd/dpkg-r.log 2>&1 || { cat /run/oomd-sd/dpkg-r.log; fail "dpkg -r failed"; }
tr=$(($(now_ms) - t0))
sd_active && fail "oomdelayfs.service still active after dpkg -r"
fuse_mounted "$SHADOW" && fail "$SHADOW still mounted after dpkg -r"
alive "$mp" && fail "the daemon (pid $mp) is alive after dpkg -r"
left=$(sd_unit_procs)
[ -z "$left" ] || fail "processes left in the unit's cgroup: $left"
pgrep -x oomdelayfs >/dev/null && fail "an oomdelayfs process is left: $(pgrep -a oomdelayfs)"
# the stop was decided by systemd's answer (a stop job), not by a failure to ask it
[ -n "$(sd_journal_at_ms '^SIGTERM, not a restart \(systemd: job [0-9]+ \(stop\), in [0-9]+ ms\): handing every cgroup back')" ] ||
	fail "no 'SIGTERM, not a restart (systemd: job N (stop))' line: the daemon did not ask systemd, or got no answer"
for n in h i; do
	cg=$top/$n
	[ "$(cat "$cg/memory.max")" = "$L" ] || fail "$n: real memory.max $(cat "$cg/memory.max") after the remove, not L"
	[ "$(cat "$cg/memory.high")" = max ] || fail "$n: real memory.high $(cat "$cg/memory.high") after the remove, not the user's (max)"
	if odt xattr get "$cg" trusted.oomdelayfs.state >/dev/null 2>&1; then
		fail "$n: state xattr still there after the remove"
	fi
done
wait_for 10000 dead "$HOG_PID" || fail "the hog held in h survived the hand-back by 10 s (usage $(current "$top/h"))"
hk=$(($(now_ms) - t0))

t1=$(now_ms)
dpkg --purge oomdelayfs >/run/oomd-sd/dpkg-purge.log 2>&1 || { cat /run/oomd-sd/dpkg-purge.log; fail "dpkg --purge failed"; }
tp=$(($(now_ms) - t1))
sd_installed && fail "dpkg still lists oomdelayfs as installed"
dpkg-query -W -f '${Status}' oomdelayfs 2>/dev/null | grep -q 'not-installed' ||
	[ -z "$(dpkg-query -W -f '${Status}' oomdelayfs 2>/dev/null)" ] ||
	fail "dpkg status after the purge: $(dpkg-query -W -f '${Status}' oomdelayfs)"
kept=''
for f in $files /etc/oomdelayfs /run/oomdelayfs /etc/systemd/system/multi-user.target.wants/oomdelayfs.service \
	/var/lib/systemd/deb-systemd-helper-enabled/oomdelayfs.service.dsh-also; do
	[ -e "$f" ] || [ -L "$f" ] && kept="$kept $f"
done
[ -z "$kept" ] || fail "left after the purge:$kept"
lf=$(systemctl show -p LoadState --value oomdelayfs)
[ "$lf" = not-found ] || fail "systemd still knows oomdelayfs.service after the purge: LoadState=$lf"
pass "dpkg -r ${tr} ms (unit stopped, systemd's stop job seen by the daemon, $SHADOW unmounted, h and i handed back: real max L, high max," \
	"no state), the held hog killed ${hk} ms after the remove began; dpkg --purge ${tp} ms, none of" \
	"$(echo "$files" | wc -l) files, the configuration or /run/oomdelayfs left"
