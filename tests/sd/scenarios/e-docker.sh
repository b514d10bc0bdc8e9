# e-docker (issue 19): Debian 12's Docker 20.10 wired as docs/CONTAINERS.md says (daemon.json:
# the shim as the default runtime), containers asking the Docker way, by label: A
# org.oomdelayfs.oom_kill_disable=true is held at its --memory until `docker update --memory`
# raises it, B org.oomdelayfs.oom_delay_millisecs=2000 is held and killed on time, C asks for
# nothing and is left alone; A and B see the shadow over their /sys/fs/cgroup, kept across
# `systemctl restart oomdelayfs`. Beside it: a label that comes from the image (LABEL) is refused,
# the same request given on `docker run` in another spelling works; `--oom-kill-disable` itself
# is still discarded by dockerd (why a label: dockerlabels.h).
# Figures: the restart, the hold, the release after the update, the kill's lateness.
# timeout: 420
. /payload/lib.sh
log "begins"
command -v dockerd >/dev/null || skip "docker.io is not in the image"
# --- docs/CONTAINERS.md, Docker
mkdir -p /etc/docker
cat >/etc/docker/daemon.json <<'JSON'
{
  "runtimes": { "oomdelayfs": { "path": "/usr/bin/oomdelayfs-runtime" } },
  "default-runtime": "oomdelayfs"
}
JSON
log "systemctl reload docker"
systemctl reload docker || fail "dockerd does not reload the documented daemon.json"
_default_rt() { docker info --format "{{.DefaultRuntime}}" 2>/dev/null | grep -qx oomdelayfs; }
wait_for 30000 _default_rt || fail "dockerd did not take default-runtime oomdelayfs: $(docker info --format "{{.DefaultRuntime}}")"
sd_image_docker
log "image loaded"

eng_run() {
	case $2 in
	disable) set -- "$1" --label org.oomdelayfs.oom_kill_disable=true ;;
	delay) set -- "$1" --label org.oomdelayfs.oom_delay_millisecs="$E_T" ;;
	*) set -- "$1" ;;
	esac
	_n=$1
	shift
	docker run -d --network none --name "$_n" --memory 64m "$@" "$SD_IMAGE" sh -c "$E_PROG" >/dev/null
}
eng_pid() { docker inspect -f '{{.State.Pid}}' "$1"; }
eng_exec() { _n=$1; shift; docker exec "$_n" "$@"; }
eng_update() { docker update --memory 256m --memory-swap 256m "$1" >/dev/null; }
eng_logs() { docker logs "$1"; }
eng_rm() { docker rm -f "$1"; }
e_body

# --oom-kill-disable: dockerd discards it on cgroup v2 (nothing reaches the runtime)
w=$(docker run --rm --network none --memory 64m --oom-kill-disable "$SD_IMAGE" true 2>&1)
echo "$w" | grep -q 'OomKillDisable discarded' || fail "docker run --oom-kill-disable no longer warns (has Docker changed?): $w"
# an image's label is not a request: refused, with the reason; the user's request in another
# spelling is taken
docker import --change 'LABEL org.oomdelayfs.oom_kill_disable=true' "$PAYLOAD/images/rootfs.tar" oomd-labelled >/dev/null ||
	fail "docker import --change LABEL failed"
out=$(docker run --rm --network none --memory 64m oomd-labelled true 2>&1) && fail "a container whose image carries the label started: $out"
echo "$out" | grep -q 'comes from the image' || fail "the refusal does not say why: $out"
docker run -d --network none --name oomd-d --memory 64m --label org.oomdelayfs.oom_kill_disable=1 oomd-labelled sleep 3600 >/dev/null ||
	fail "the user's --label ...=1 on an image with the label was refused"
docker exec oomd-d cat /sys/fs/cgroup/memory.oom_control | grep -qx 'oom_kill_disable 1' || fail "D: no kill-disable inside"
docker rm -f oomd-d >/dev/null
pass "$E_FIGURES; --oom-kill-disable still discarded by dockerd; an image's LABEL refused, the user's label taken"
