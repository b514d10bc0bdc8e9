# e-containerd (issue 19): Debian 12's containerd 1.6.20 with runc 1.1.5. ctr as
# docs/CONTAINERS.md says (--runc-binary the shim, the request as --annotation): A asks for the
# kill-disable and is held until its limit is raised through the shadow (ctr 1.6 has no `task update`), B asks for a
# 2,000 ms delay and is killed on time, C asks for nothing; A and B see the shadow over
# /sys/fs/cgroup, kept across `systemctl restart oomdelayfs`. And the CRI side of a Kubernetes
# node (no crictl in Debian 12): the package's containerd-cri.toml appended to Debian's
# config.toml is taken (containerd config dump shows the handler "oomdelayfs" of the
# RuntimeClass, the CRI plugin loads) and containerd still runs containers.
# ctr's default spec mounts no cgroup file system and makes no cgroup namespace (e-images: its
# /sys/fs/cgroup is sysfs's); the shim gives a container that asked both (ocispec.h,
# ocispec_ensure_cgroup_mount), so it sees its own shadow cgroup at /sys/fs/cgroup, and the
# host's cgroup2 mount keeps nsdelegate (runc's mount in the host's namespace would clear it).
# timeout: 420
. /payload/lib.sh
log "begins"
command -v containerd >/dev/null || skip "containerd is not in the image"
systemctl is-active -q containerd || systemctl start containerd || fail "containerd does not start"
sd_installed || sd_install
# --- docs/CONTAINERS.md, containerd (CRI)
cri0=$(ctr plugins ls | awk '$2 == "cri" { print $NF }')
grep -q 'runtimes.oomdelayfs' /etc/containerd/config.toml ||
	cat /usr/share/oomdelayfs/containerd-cri.toml >>/etc/containerd/config.toml
systemctl restart containerd || fail "containerd does not restart with the handler appended"
wait_for 10000 ctr version >/dev/null 2>&1 || fail "containerd does not answer after the restart"
containerd config dump >/run/oomd-sd/containerd.dump 2>&1 || fail "containerd config dump failed"
sed -n '/runtimes\.oomdelayfs\.options\]/,/BinaryName/p' /run/oomd-sd/containerd.dump | grep -q 'BinaryName = "/usr/bin/oomdelayfs-runtime"' ||
	fail "containerd config dump has no oomdelayfs handler with the shim: $(grep -A8 'runtimes.oomdelayfs' /run/oomd-sd/containerd.dump | tr '\n' ' ')"
ctr plugins ls | grep -q 'io.containerd.grpc.v1 *cri .* ok' || fail "the CRI plugin did not load (before the append: $cri0): $(ctr plugins ls | grep cri | tr -s ' '); containerd's journal: $(journalctl -u containerd --no-pager -o cat | grep -iE 'failed to load plugin|level=(error|fatal)' | tail -n 4 | cut -c1-600 | tr '\n' ' ')"
sd_image_ctr
log "image loaded"

eng_run() {
	case $2 in
	disable) set -- "$1" --annotation org.oomdelayfs.oom_kill_disable=true ;;
	delay) set -- "$1" --annotation org.oomdelayfs.oom_delay_millisecs="$E_T" ;;
	*) set -- "$1" ;;
	esac
	_n=$1
	shift
	ctr run -d --log-uri "file:///run/oomd-sd/ctr-$_n.log" --runc-binary /usr/bin/oomdelayfs-runtime \
		--memory-limit "$E_L" "$@" "$SD_IMAGE" "$_n" sh -c "$E_PROG" >/dev/null
}
eng_pid() { ctr task ls | awk -v n="$1" '$1 == n { print $2 }'; }
eng_exec() { _n=$1; shift; ctr task exec --exec-id "x$(date +%s%N)" "$_n" "$@"; }
# ctr 1.6 has no `task update` ("No help topic for 'update'", measured): the limit is raised
# through the shadow, the way docs/CONTAINERS.md gives it for ctr
eng_update() {
	[ "$(e_cg "$1")" = "$CGROOT/default/$1" ] || fail "$1's cgroup is $(e_cg "$1"), not /default/$1 as docs/CONTAINERS.md says"
	echo "$2" >"$SHADOW/default/$1/memory.max"
}
eng_logs() { cat "/run/oomd-sd/ctr-$1.log"; }
eng_rm() { ctr task kill -s KILL "$1"; sleep 0.3; ctr task rm -f "$1"; ctr container rm "$1"; rm -f "/run/oomd-sd/ctr-$1.log"; }
E_PLAIN_TYPE=62656572 # C asked for nothing: ctr's default spec, sysfs at /sys/fs/cgroup (e-images)
nsd0=$(grep -c 'cgroup2 .*nsdelegate' /proc/mounts)
e_body
[ "$(grep -c 'cgroup2 .*nsdelegate' /proc/mounts)" = "$nsd0" ] || fail "the host's cgroup2 mount lost nsdelegate: $(grep cgroup2 /proc/mounts)"
pass "$E_FIGURES; CRI handler oomdelayfs in the dump, CRI plugin ok; the host's nsdelegate kept ($nsd0 mount)"
