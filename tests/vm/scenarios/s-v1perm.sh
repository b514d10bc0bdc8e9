# s-v1perm (issue 10, deliverable 2, --layout v1): in a cgroup delegated the cgroup-v2 way
# (directory, cgroup.procs, cgroup.threads, cgroup.subtree_control chowned to uid 1000), the v1
# view's files show the owner and mode of the v2 file each writes, and uid 1000 cannot write
# memory.limit_in_bytes, memory.soft_limit_in_bytes, memory.failcnt, memory.max_usage_in_bytes,
# memory.force_empty, memory.oom_control or memory.oom_delay_millisecs (EACCES, as for the real
# memory.max); the real memory.max and memory.high are unchanged. The legitimate actions beside:
# the owner makes child cgroups, sets a child's limit (it owns the child's files, as cgroupfs gives
# a cgroup's files to whoever made it) and moves a process between children through the v1
# cgroup.procs; after the admin chowns memory.max, the owner's memory.limit_in_bytes write works.
# timeout: 90
. /oomd/lib.sh
start_daemon /shadow --layout v1
L=$((32 * MiB))
U=1000
cg=$(mkcg v1p); s=/shadow${cg#$CGROOT}
setknob "$s" memory.limit_in_bytes "$L"
rmax=$(cat "$cg/memory.max"); rhigh=$(cat "$cg/memory.high")
delegate "$cg" "$U"
as() { odt asuser "$U" "$U" "$@"; }
# shows V1FILE V2FILE: the v1 file has the v2 file's owner and mode
shows() {
	[ "$(lsattrs "$s/$1")" = "$(lsattrs "$cg/$2")" ] || fail "$1 shows '$(lsattrs "$s/$1")', $2 is '$(lsattrs "$cg/$2")'"
}
shows memory.limit_in_bytes memory.max
shows memory.oom_control memory.max
shows memory.oom_delay_millisecs memory.max
shows memory.usage_in_bytes memory.current
shows memory.soft_limit_in_bytes memory.low
shows cgroup.procs cgroup.procs
shows tasks cgroup.threads
[ "$(lsattrs "$s/memory.force_empty" | cut -d' ' -f1)" = "--w-------" ] || fail "memory.force_empty is $(lsattrs "$s/memory.force_empty")"
denied() {
	write_denied "$U" "$s/$1" "$2"
	n=$((n + 1))
}
n=0
denied memory.limit_in_bytes $((96 * MiB))
denied memory.limit_in_bytes -1
denied memory.soft_limit_in_bytes $((8 * MiB))
denied memory.failcnt 0
denied memory.max_usage_in_bytes 0
denied memory.force_empty 0
denied memory.oom_control 1
denied memory.oom_delay_millisecs 60000
[ -e "$s/memory.memsw.limit_in_bytes" ] && denied memory.memsw.limit_in_bytes -1
[ "$(cat "$cg/memory.max")" = "$rmax" ] || fail "real memory.max went from $rmax to $(cat "$cg/memory.max")"
[ "$(cat "$cg/memory.high")" = "$rhigh" ] || fail "real memory.high went from $rhigh to $(cat "$cg/memory.high")"
[ "$(cat "$s/memory.limit_in_bytes")" = "$L" ] || fail "memory.limit_in_bytes reads $(cat "$s/memory.limit_in_bytes")"

# legitimate: children, a child's limit, a move between children through the v1 cgroup.procs
as mkdir "$s/c1" "$s/c2" || fail "the owner cannot make child cgroups through the v1 view"
as odt write "$s/c1/memory.limit_in_bytes" $((16 * MiB)) >/dev/null || fail "the owner cannot limit its own child c1"
[ "$(cat "$cg/c1/memory.max")" = $((16 * MiB)) ] || fail "c1's real memory.max is $(cat "$cg/c1/memory.max")"
owner_moves "$U" "$cg" "$s"

# the admin delegates memory.max
chown "$U:$U" "$cg/memory.max" || fail "chown memory.max"
shows memory.limit_in_bytes memory.max
as odt write "$s/memory.limit_in_bytes" $((48 * MiB)) >/dev/null || fail "uid $U cannot write memory.limit_in_bytes after chown"
[ "$(cat "$cg/memory.max")" = $((48 * MiB)) ] || fail "after the owner's write the real memory.max is $(cat "$cg/memory.max")"
as odt write "$s/memory.oom_delay_millisecs" 500 >/dev/null || fail "uid $U cannot write the delay after chown"
stop_daemon
pass "$n writes by uid $U refused with EACCES, real memory.max $rmax and high $rhigh unchanged;" \
	"v1 files show their v2 file's owner and mode; owner made c1, c2, limited c1, moved a pid;" \
	"after chown memory.max its limit_in_bytes write set the real memory.max to 48 MiB"
