# c-crun (issue 12): Debian's crun with oomdelayfs-oci-hook and the oomdelayfs-runtime shim.
# A container with disableOOMKiller: true is held at its limit and runs on when
# `crun update --memory` raises it; one with org.oomdelayfs.oom_delay_millisecs is held T ms,
# then killed; inside, /sys/fs/cgroup is the container's shadow (synthetic files, its own pids,
# a v1 listener notified) over the runtime's cgroup2 mount; a container that asks for neither
# is exactly as without oomdelayfs. The body is tests/vm/containers.sh.
# Figures: the raise's time to the container's exit, the kill after the deadline.
# timeout: 240
# image: containers
. /oomd/lib.sh
RT=crun
. /oomd/containers.sh
