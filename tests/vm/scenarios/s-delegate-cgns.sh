# s-delegate-cgns (issue 10, deliverable 2, "EPERM where the kernel says so"): root in a cgroup
# namespace rooted at its own cgroup (cgroup2 mounted with nsdelegate, as systemd and the VM do)
# may not write that cgroup's files that are not delegatable: cgroup_file_write() answers EPERM
# for the real memory.max and memory.low. Through the shadow the same root gets EPERM for
# memory.oom_control, memory.oom_delay_millisecs, the virtualised memory.max and the passed-through
# memory.low, and nothing changes: the daemon writes those files as itself from the initial
# namespace, so it judges by the opener's namespace. Beside it: the same writes by root outside the
# namespace work, and inside it a write to cgroup.procs (delegatable) works.
# timeout: 60
. /oomd/lib.sh
grep -q 'cgroup2.*nsdelegate' /proc/self/mountinfo || skip "cgroup2 is not mounted with nsdelegate"
start_daemon /shadow
L=$((32 * MiB))
cg=$(mkcg ns); s=/shadow${cg#$CGROOT}
setknob "$s" memory.max "$L"
rmax=$(cat "$cg/memory.max"); rlow=$(cat "$cg/memory.low")
# inns CMD...: run CMD as root in a new cgroup namespace rooted at $cg
inns() { sh -c 'echo $$ >"$0/cgroup.procs" && exec odt cgns "$@"' "$cg" "$@"; }
eperm() {
	_o=$(inns odt write "$1" "$2" 2>&1) && fail "root in $cg's cgroup namespace wrote '$2' to $1 ($_o)"
	case $_o in *"Operation not permitted"*) ;; *) fail "root in the namespace, $1: '$_o', not EPERM" ;; esac
	n=$((n + 1))
}
n=0
eperm "$cg/memory.max" $((96 * MiB)) # the kernel's answer for the real files, to compare with
eperm "$cg/memory.low" $((8 * MiB))
eperm "$s/memory.oom_control" 1
eperm "$s/memory.oom_delay_millisecs" 60000
eperm "$s/memory.max" $((96 * MiB))
eperm "$s/memory.low" $((8 * MiB))
[ "$(cat "$cg/memory.max")" = "$rmax" ] || fail "real memory.max went from $rmax to $(cat "$cg/memory.max")"
[ "$(cat "$cg/memory.low")" = "$rlow" ] || fail "real memory.low went from $rlow to $(cat "$cg/memory.low")"
grep -q '^oom_kill_disable 0' "$s/memory.oom_control" || fail "oom_kill_disable changed: $(cat "$s/memory.oom_control")"
[ "$(cat "$s/memory.oom_delay_millisecs")" = 0 ] || fail "the delay changed to $(cat "$s/memory.oom_delay_millisecs")"
[ "$(cat "$s/memory.max")" = "$L" ] || fail "the shadow's memory.max reads $(cat "$s/memory.max")"
# beside it: a delegatable file inside the namespace, the same knobs from outside
o=$(inns sh -c "echo \$\$ >$s/cgroup.procs" 2>&1) || fail "root in the namespace cannot write cgroup.procs through the shadow: $o"
setknob "$s" memory.oom_delay_millisecs 500
setknob "$s" memory.oom_control 1
setknob "$s" memory.low $((8 * MiB))
[ "$(cat "$s/memory.oom_delay_millisecs")" = 500 ] || fail "the delay reads $(cat "$s/memory.oom_delay_millisecs") after root's write from outside"
[ "$(cat "$cg/memory.low")" = $((8 * MiB)) ] || fail "real memory.low is $(cat "$cg/memory.low") after root's write from outside"
stop_daemon
pass "$n writes by root in $cg's cgroup namespace refused with EPERM (2 real files, 4 through the shadow)," \
	"nothing changed; cgroup.procs inside and the same knobs from outside work"
