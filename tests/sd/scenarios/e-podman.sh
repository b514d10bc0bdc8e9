# e-podman (issue 19): Debian 12's podman 4.3.1 with crun, wired as docs/CONTAINERS.md says (the
# package's hooks.d file; the containers.conf.d drop-in naming the shim as crun): A asks with
# podman's own --oom-kill-disable (disableOOMKiller: true, which crun refuses on cgroup v2:
# the shim moves it) and is held until `podman update --memory` raises its limit, B asks for a
# 2,000 ms delay by annotation (the hooks.d file) and is killed on time, C asks for nothing and
# keeps its cgroup2; A and B see the shadow over /sys/fs/cgroup, kept across `systemctl restart
# oomdelayfs`. Beside it: without the drop-in, crun itself refuses --oom-kill-disable.
# Figures: the restart, the hold, the release after the update, the kill's lateness.
# timeout: 420
. /payload/lib.sh
log "begins"
command -v podman >/dev/null || skip "podman is not in the image"
sd_installed || sd_install
# without the drop-in: crun refuses the field (what the shim is for)
rm -f /etc/containers/containers.conf.d/oomdelayfs.conf
sd_image_podman
log "image loaded"
out=$(podman run --rm --network none --memory 64m --oom-kill-disable "$SD_IMAGE" true 2>&1) &&
	fail "podman run --oom-kill-disable with crun alone started (has crun changed?): $out"
# --- docs/CONTAINERS.md, podman
mkdir -p /etc/containers/containers.conf.d
cp /usr/share/oomdelayfs/podman-oomdelayfs.conf /etc/containers/containers.conf.d/oomdelayfs.conf

eng_run() {
	case $2 in
	disable) set -- "$1" --oom-kill-disable ;;
	delay) set -- "$1" --annotation org.oomdelayfs.oom_delay_millisecs="$E_T" ;;
	*) set -- "$1" ;;
	esac
	_n=$1
	shift
	podman run -d --network none --name "$_n" --memory 64m "$@" "$SD_IMAGE" sh -c "$E_PROG" >/dev/null
}
eng_pid() { podman inspect -f '{{.State.Pid}}' "$1"; }
eng_exec() { _n=$1; shift; podman exec "$_n" "$@"; }
eng_update() { podman update --memory 256m "$1" >/dev/null; }
eng_logs() { podman logs "$1"; }
eng_rm() { podman rm -f "$1"; }
e_body
# the annotation asks for the kill-disable too
podman run -d --network none --name oomd-d --memory 64m --annotation org.oomdelayfs.oom_kill_disable=true "$SD_IMAGE" sleep 3600 >/dev/null ||
	fail "podman run --annotation org.oomdelayfs.oom_kill_disable=true failed"
podman exec oomd-d cat /sys/fs/cgroup/memory.oom_control | grep -qx 'oom_kill_disable 1' || fail "D: no kill-disable inside"
podman rm -f oomd-d >/dev/null
pass "$E_FIGURES; crun alone refuses --oom-kill-disable, through the drop-in it holds"
