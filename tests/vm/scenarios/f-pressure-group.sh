# f-pressure-group (issue 5, deliverable 1): f-pressure with --kill-mode group, for comparison:
# the kill is a cgroup.kill write instead of the kernel's reclaim and OOM kill inside a
# memory.max write. Figures: the daemon's kill start, the write's return and when the cgroups
# were seen empty, each relative to its deadline.
# timeout: 300
OOMD_FP_MODE=group
. /oomd/scenarios/f-pressure.sh
