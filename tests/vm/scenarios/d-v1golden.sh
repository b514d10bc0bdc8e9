# d-v1golden (issue 4, deliverable 4 on 6.12): the legacy v1 client of d-v1diff (progs/v1diff.c)
# against `oomdelayfs --layout v1`, compared with the transcript native cgroup v1 gave on Debian's
# 6.1 (6.1.0-57, recorded by d-v1diff; 6.12 has no v1 memory controller to run it on). Every
# difference is printed; the documented deviations (docs/V1-LAYOUT.md, D1-D6) are accepted, any
# other fails. Both kernels.
# timeout: 150
. /oomd/lib.sh
N=test-$OOMD_SCENARIO
cat >/tmp/v1golden.native <<'NATIVE'
ls c: cgroup.clone_children cgroup.event_control cgroup.procs memory.failcnt memory.force_empty memory.kmem.failcnt memory.kmem.limit_in_bytes memory.kmem.max_usage_in_bytes memory.kmem.slabinfo memory.kmem.tcp.failcnt memory.kmem.tcp.limit_in_bytes memory.kmem.tcp.max_usage_in_bytes memory.kmem.tcp.usage_in_bytes memory.kmem.usage_in_bytes memory.limit_in_bytes memory.max_usage_in_bytes memory.memsw.failcnt memory.memsw.limit_in_bytes memory.memsw.max_usage_in_bytes memory.memsw.usage_in_bytes memory.move_charge_at_immigrate memory.numa_stat memory.oom_control memory.pressure_level memory.soft_limit_in_bytes memory.stat memory.swappiness memory.usage_in_bytes memory.use_hierarchy notify_on_release tasks
ls root: cgroup.clone_children cgroup.event_control cgroup.procs cgroup.sane_behavior memory.failcnt memory.force_empty memory.kmem.failcnt memory.kmem.limit_in_bytes memory.kmem.max_usage_in_bytes memory.kmem.slabinfo memory.kmem.tcp.failcnt memory.kmem.tcp.limit_in_bytes memory.kmem.tcp.max_usage_in_bytes memory.kmem.tcp.usage_in_bytes memory.kmem.usage_in_bytes memory.limit_in_bytes memory.max_usage_in_bytes memory.memsw.failcnt memory.memsw.limit_in_bytes memory.memsw.max_usage_in_bytes memory.memsw.usage_in_bytes memory.move_charge_at_immigrate memory.numa_stat memory.oom_control memory.pressure_level memory.soft_limit_in_bytes memory.stat memory.swappiness memory.usage_in_bytes memory.use_hierarchy notify_on_release release_agent tasks
read c/memory.limit_in_bytes: [9223372036854771712|]
read c/memory.usage_in_bytes: <bytes>|
read c/memory.max_usage_in_bytes: <bytes>|
read c/memory.failcnt: [0|]
read c/memory.soft_limit_in_bytes: [9223372036854771712|]
read c/memory.memsw.limit_in_bytes: [9223372036854771712|]
read c/memory.memsw.usage_in_bytes: <bytes>|
read c/memory.memsw.max_usage_in_bytes: <bytes>|
read c/memory.memsw.failcnt: [0|]
read c/memory.stat keys: cache rss rss_huge shmem mapped_file dirty writeback workingset_refault_anon workingset_refault_file swap pgpgin pgpgout pgfault pgmajfault inactive_anon active_anon inactive_file active_file unevictable hierarchical_memory_limit=9223372036854771712 hierarchical_memsw_limit=9223372036854771712 total_cache total_rss total_rss_huge total_shmem total_mapped_file total_dirty total_writeback total_workingset_refault_anon total_workingset_refault_file total_swap total_pgpgin total_pgpgout total_pgfault total_pgmajfault total_inactive_anon total_active_anon total_inactive_file total_active_file total_unevictable
read c/memory.use_hierarchy: [1|]
read c/tasks: 0 lines
read c/cgroup.procs: 0 lines
read c/memory.oom_control: [oom_kill_disable 0|under_oom 0|oom_kill 0|]
read c/cgroup.event_control: EINVAL
read root/memory.limit_in_bytes: [9223372036854771712|]
read root/memory.failcnt: [0|]
read root/memory.soft_limit_in_bytes: [9223372036854771712|]
read root/memory.memsw.limit_in_bytes: [9223372036854771712|]
read root/memory.memsw.failcnt: [0|]
read root/memory.use_hierarchy: [1|]
read root/tasks: <lines> sorted
read root/cgroup.procs: <lines> sorted
read root/memory.oom_control: [oom_kill_disable 0|under_oom 0|oom_kill 0|]
read root/cgroup.event_control: EINVAL
mode c/memory.limit_in_bytes: 644
mode c/memory.usage_in_bytes: 444
mode c/memory.max_usage_in_bytes: 644
mode c/memory.failcnt: 644
mode c/memory.soft_limit_in_bytes: 644
mode c/memory.memsw.limit_in_bytes: 644
mode c/memory.memsw.usage_in_bytes: 444
mode c/memory.memsw.max_usage_in_bytes: 644
mode c/memory.memsw.failcnt: 644
mode c/memory.stat: 444
mode c/memory.use_hierarchy: 644
mode c/tasks: 644
mode c/cgroup.procs: 644
mode c/memory.oom_control: 644
mode c/cgroup.event_control: 222
write c/memory.limit_in_bytes 'max': EINVAL -> [9223372036854771712|]
write c/memory.limit_in_bytes '-2': EINVAL -> [9223372036854771712|]
write c/memory.limit_in_bytes 'abc': EINVAL -> [9223372036854771712|]
write c/memory.limit_in_bytes '1x': EINVAL -> [9223372036854771712|]
write c/memory.limit_in_bytes '0x': EINVAL -> [9223372036854771712|]
write c/memory.limit_in_bytes '': OK -> [9223372036854771712|]
write c/memory.limit_in_bytes '\n': OK -> [0|]
write c/memory.limit_in_bytes ' 8k ': OK -> [8192|]
write c/memory.limit_in_bytes '12345': OK -> [12288|]
write c/memory.limit_in_bytes '1G': OK -> [1073741824|]
write c/memory.limit_in_bytes '-1': OK -> [9223372036854771712|]
write c/memory.limit_in_bytes '0x1000': OK -> [4096|]
write c/memory.limit_in_bytes '010': OK -> [0|]
write c/memory.limit_in_bytes '+4096': EINVAL -> [0|]
write c/memory.limit_in_bytes '4096 4096': EINVAL -> [0|]
write c/memory.limit_in_bytes '1e': OK -> [1152921504606846976|]
write c/memory.limit_in_bytes '99999999999999999999': OK -> [7766279631452237824|]
write c/memory.limit_in_bytes '9223372036854775807': OK -> [9223372036854771712|]
write c/memory.limit_in_bytes '8192\0': OK -> [8192|]
write root/memory.limit_in_bytes '1G': EINVAL -> [9223372036854771712|]
write root/memory.limit_in_bytes '-1': EINVAL -> [9223372036854771712|]
write c/memory.oom_control '2': EINVAL -> [oom_kill_disable 0|under_oom 0|oom_kill 0|]
write c/memory.oom_control '-1': EINVAL -> [oom_kill_disable 0|under_oom 0|oom_kill 0|]
write c/memory.oom_control 'abc': EINVAL -> [oom_kill_disable 0|under_oom 0|oom_kill 0|]
write c/memory.oom_control '1 ': EINVAL -> [oom_kill_disable 0|under_oom 0|oom_kill 0|]
write c/memory.oom_control '01': OK -> [oom_kill_disable 1|under_oom 0|oom_kill 0|]
write c/memory.oom_control '0x1': OK -> [oom_kill_disable 1|under_oom 0|oom_kill 0|]
write c/memory.oom_control '': OK -> [oom_kill_disable 1|under_oom 0|oom_kill 0|]
write c/memory.oom_control '1\n': OK -> [oom_kill_disable 1|under_oom 0|oom_kill 0|]
write c/memory.oom_control '0': OK -> [oom_kill_disable 0|under_oom 0|oom_kill 0|]
write c/memory.oom_control '0\0': OK -> [oom_kill_disable 0|under_oom 0|oom_kill 0|]
write root/memory.oom_control '1': EINVAL -> [oom_kill_disable 0|under_oom 0|oom_kill 0|]
write root/memory.oom_control '0': EINVAL -> [oom_kill_disable 0|under_oom 0|oom_kill 0|]
write c/memory.use_hierarchy '0': EINVAL -> [1|]
write c/memory.use_hierarchy '2': EINVAL -> [1|]
write c/memory.use_hierarchy '1': OK -> [1|]
write c/memory.soft_limit_in_bytes 'max': EINVAL -> [9223372036854771712|]
write c/memory.soft_limit_in_bytes '1M': OK -> [1048576|]
write c/memory.soft_limit_in_bytes '-1': OK -> [9223372036854771712|]
write c/memory.max_usage_in_bytes '0': OK -> [0|]
write c/memory.max_usage_in_bytes 'abc': OK -> [0|]
write c/memory.failcnt '0': OK -> [0|]
write c/memory.failcnt '5': OK -> [0|]
write c/memory.force_empty '0': OK -> [(EINVAL)]
write root/memory.force_empty '0': EINVAL -> [(EINVAL)]
write c/memory.usage_in_bytes '0': EINVAL -> [0|]
write c/memory.stat '0': EINVAL -> [cache 0|rss 0|rss_huge 0|shmem 0|mapped_file 0|dirty 0|writeback 0|workingset_refault_anon 0|workingset_refault_file 0|swap 0|pgpgin 0|pgpgout 0|pgfault 0|pgmajfault 0|inactive_anon 0|active_anon 0|inactive_file 0|active_file 0|unevictable 0|hierarchical_memory_limit 8192|hierarchical_memsw_limit 9223372036854771712|total_cache 0|total_rss 0|total_rss_huge 0|total_shmem 0|total_mapped_file 0|total_dirty 0|total_writeback 0|total_workingset_refault_anon 0|total_workingset_refault_file 0|total_swap 0|total_pgpgin 0|total_pgpgout 0|total_pgfault 0|total_pgmajfault 0|total_inactive_anon 0|total_active_anon 0|total_inactive_file 0|total_active_file 0|total_unevictable 0|]
write c/tasks '999999': ESRCH -> []
write c/tasks 'abc': EINVAL -> []
write c/cgroup.procs '999999': ESRCH -> []
write c/memory.limit_in_bytes '64M': OK -> [67108864|]
write c/memory.memsw.limit_in_bytes '32M': EINVAL -> [9223372036854771712|]
write c/memory.memsw.limit_in_bytes '128M': OK -> [134217728|]
write c/memory.limit_in_bytes '256M': EINVAL -> [67108864|]
write c/memory.limit_in_bytes '96M': OK -> [100663296|]
write c/memory.memsw.limit_in_bytes '-1': OK -> [9223372036854771712|]
write c/memory.limit_in_bytes '-1': OK -> [9223372036854771712|]
write c/memory.memsw.failcnt '0': OK -> [0|]
write c/memory.memsw.max_usage_in_bytes '0': OK -> [0|]
== oom
evctl 'x': EINVAL
evctl '<efd>': EINVAL
evctl '<efd>  <cfd>' (two spaces): EINVAL
evctl '<efd> 9999': EBADF
evctl '9999 <cfd>': EBADF
evctl '<pipe> <cfd>': EINVAL
evctl '<efd> <usage fd>': OK
evctl '<efd> <usage fd> 1G' (threshold): OK
evctl '<efd> <parent oom_control>': EINVAL
evctl '<efd> <oom_control O_WRONLY>': OK
evctl '<efd> <cfd> junk': OK
evctl c '<efd> <cfd>\n': OK
evctl parent '<efd> <pfd>': OK
efd after register: c=0 parent=0
write c/memory.limit_in_bytes '32M': OK -> [33554432|]
write c/memory.oom_control '1': OK -> [oom_kill_disable 1|under_oom 0|oom_kill 0|]
A: hog finished before the raise: no; alive: yes
A: efd during hold: c=1 parent=0
read c/memory.oom_control: [oom_kill_disable 1|under_oom 1|oom_kill 0|]
read parent/memory.oom_control: [oom_kill_disable 0|under_oom 0|oom_kill 0|]
write c/memory.limit_in_bytes '128M': OK -> [134217728|]
A: hog finished after the raise: yes
A: under_oom sequence: c=0,1,0 parent=0
A: efd after the raise: c=0 parent=0
A: oom_kill c=0 parent=0
write c/memory.oom_control '0': OK -> [oom_kill_disable 0|under_oom 0|oom_kill 0|]
write c/memory.limit_in_bytes '32M': OK -> [33554432|]
B: hog ended: SIGKILL
B: under_oom sequence: c=0
B: efd: c=1 parent=0
B: oom_kill c=1 parent=0
read c/memory.failcnt: <nonzero>
== end
write c/memory.limit_in_bytes '64M': OK -> [67108864|]
C: 16 MiB hog finished: yes
write c/memory.limit_in_bytes '8M': EBUSY -> [67108864|]
C: hog alive after the limit went below its usage: yes
C: efd: c=0 parent=0
C: write max_usage_in_bytes '0': OK
C: max_usage after reset: <1 MiB
write c/memory.limit_in_bytes '-1': OK -> [9223372036854771712|]
D: write a thread's tid to c/tasks: OK
D: write it back to root/tasks: OK
E: write a pid to the parent's cgroup.procs (it has a child): OK
== rmdir
rmdir c: OK
efd after rmdir c: c=1 parent=0
rmdir parent: OK
efd after rmdir parent: parent=1
NATIVE
start_daemon /shadow --layout v1
v1diff /shadow "$N" >/tmp/v1golden.shadow 2>&1 || echo "v1diff (shadow) exited $?"
rmdir "$CGROOT/$N/c" "$CGROOT/$N" 2>/dev/null
stop_daemon
start_daemon /shadow
v1diff --v2 /shadow "$N" >/tmp/v1golden.v2 2>&1 || echo "v1diff --v2 (shadow) exited $?"
rmdir "$CGROOT/$N/c" "$CGROOT/$N" 2>/dev/null
stop_daemon
oompart() { awk '/^== oom/ {f = 1} /^== end/ {f = 0} /^== rmdir/ {f = 1} f' "$1" | grep -v -e '^#' -e '^read c/memory.failcnt'; }
oompart /tmp/v1golden.native >/tmp/v1golden.no
oompart /tmp/v1golden.v2 >/tmp/v1golden.v2s
echo "--- differences of the OOM part (- native v1 on 6.1, + shadow v2 layout on $OOMD_KERNEL):"
diff -U0 /tmp/v1golden.no /tmp/v1golden.v2s | grep -v -e '^---' -e '^+++' -e '^@@' >/tmp/v1golden.d2
cat /tmp/v1golden.d2
unexpected2=$(grep '^-' /tmp/v1golden.d2 | sed 's/^-//')
[ -z "$unexpected2" ] || fail "v2 layout: $(echo "$unexpected2" | wc -l) undocumented differences from native v1 (listed above)"
echo "--- timings (shadow):"; grep '^#' /tmp/v1golden.shadow; grep '^#' /tmp/v1golden.v2
grep -v '^#' /tmp/v1golden.shadow >/tmp/v1golden.s
echo "--- differences (- native v1 on 6.1, + shadow --layout v1 on $OOMD_KERNEL):"
diff -U0 /tmp/v1golden.native /tmp/v1golden.s | grep -v -e '^---' -e '^+++' -e '^@@' >/tmp/v1golden.d
cat /tmp/v1golden.d
nd=$(grep -c '^-' /tmp/v1golden.d)
# the deviations D1-D6 of docs/V1-LAYOUT.md, as in d-v1diff
cat >/tmp/v1golden.known <<'KNOWN'
^ls c: 
^ls root: 
^read c/memory.stat keys: 
^write c/memory.stat '0': EINVAL -> 
^C: max_usage after reset: <1 MiB
^D: write a thread's tid to c/tasks: OK
^D: write it back to root/tasks: OK
^E: write a pid to the parent's cgroup.procs (it has a child): OK
KNOWN
unexpected=$(grep '^-' /tmp/v1golden.d | sed 's/^-//' | grep -v -f /tmp/v1golden.known)
if [ -n "$unexpected" ]; then
	echo "--- undocumented differences:"
	echo "$unexpected"
	fail "$(echo "$unexpected" | wc -l) undocumented differences from native v1 (listed above)"
fi
pass "$(wc -l </tmp/v1golden.native) observations compared with native v1 (6.1): --layout v1 $nd differ," \
	"all documented deviations; v2 layout (OOM part, $(wc -l </tmp/v1golden.no)) $(grep -c '^-' /tmp/v1golden.d2) differ"
