# k-notify: inotify IN_MODIFY on memory.events and poll() POLLPRI on an open memory.events
# wake up when the high and oom_kill counters change; report the latency (from the trigger:
# the child's allocation over memory.high, or the start of the memory.max write).
# timeout: 60
. /oomd/lib.sh
cg=$(mkcg nh)
h=$(odt evlat "$cg" high --mb 16 --timeout 10000 2>&1) || fail "high: $h"
cg2=$(mkcg nk)
k=$(odt evlat "$cg2" oom_kill --mb 16 --timeout 10000 2>&1) || fail "oom_kill: $k"
pass "$h; $k"
