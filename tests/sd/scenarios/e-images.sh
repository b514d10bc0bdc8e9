# e-images (issue 19, the test bed itself): the payload's busybox image reaches every engine of
# Debian 12 without a registry, and each runs a container from it, before oomdelayfs is
# installed: docker import (rootfs.tar) and docker load (busybox.tar, docker-archive) with
# docker.io 20.10; podman import and podman load with podman 4.3; ctr images import (busybox.tar,
# OCI layout) with containerd 1.6. Each container prints its cgroup file system type and exits.
# Removes everything it made. Figures: each engine's import and run times.
# only when named: a self-test of the bed (every engine runs the payload's image, no daemon). The
# e-* scenarios load the same image the same ways and run containers from it, so a bed that
# cannot shows there too; this one says which engine and which import, in 56 s a kernel that
# CI's 45 minutes cannot spare (6.12, 2026-12-06). tests/sd/run-sd.sh --scenario e-images.
# timeout: 240
. /payload/lib.sh
figs=''
t() { _t0=$(now_ms); "$@" >/run/oomd-sd/e-images.out 2>&1 || { cat /run/oomd-sd/e-images.out; fail "'$*' failed: $(tail -n 3 /run/oomd-sd/e-images.out | tr '\n' ' ')"; }; T_MS=$(($(now_ms) - _t0)); }
# busybox stat names no cgroup2: its magic, CGROUP2_SUPER_MAGIC 0x63677270
probe='stat -fc %t /sys/fs/cgroup'

systemctl is-active --quiet docker || fail "docker.service is $(systemctl is-active docker) at boot"
systemctl is-active --quiet containerd || fail "containerd.service is $(systemctl is-active containerd) at boot"
dv=$(docker version --format '{{.Server.Version}}' 2>&1) || fail "docker version: $dv"
t docker import "$PAYLOAD/images/rootfs.tar" oomd-imported:latest; figs="$figs docker import ${T_MS} ms,"
t docker run --rm --network none oomd-imported:latest $probe; out=$(cat /run/oomd-sd/e-images.out)
[ "$out" = 63677270 ] || fail "docker run (imported) printed '$out'"; figs="$figs run ${T_MS} ms,"
t docker load -i "$PAYLOAD/images/busybox.tar"; figs="$figs docker load ${T_MS} ms,"
t docker run --rm --network none "$SD_IMAGE" $probe; out=$(cat /run/oomd-sd/e-images.out)
[ "$out" = 63677270 ] || fail "docker run ($SD_IMAGE) printed '$out'"; figs="$figs run ${T_MS} ms;"
docker rmi -f oomd-imported:latest "$SD_IMAGE" >/dev/null 2>&1

pv=$(podman version --format '{{.Version}}' 2>&1) || fail "podman version: $pv"
t podman import "$PAYLOAD/images/rootfs.tar" oomd-imported:latest; figs="$figs podman import ${T_MS} ms,"
t podman run --rm --network none oomd-imported:latest $probe; out=$(tail -n 1 /run/oomd-sd/e-images.out)
[ "$out" = 63677270 ] || fail "podman run (imported) printed '$out'"; figs="$figs run ${T_MS} ms,"
t podman load -i "$PAYLOAD/images/busybox.tar"; figs="$figs podman load ${T_MS} ms,"
t podman run --rm --network none "$SD_IMAGE" $probe; out=$(tail -n 1 /run/oomd-sd/e-images.out)
[ "$out" = 63677270 ] || fail "podman run ($SD_IMAGE) printed '$out'"; figs="$figs run ${T_MS} ms;"
podman rmi -f oomd-imported:latest "$SD_IMAGE" >/dev/null 2>&1

t ctr -n oomd images import "$PAYLOAD/images/busybox.tar"; figs="$figs ctr import ${T_MS} ms,"
ctr -n oomd images ls -q | grep -qx "$SD_IMAGE" || fail "ctr images import did not name $SD_IMAGE: $(ctr -n oomd images ls -q | tr '\n' ' ')"
t ctr -n oomd run --rm "$SD_IMAGE" oomd-e-images $probe; out=$(tail -n 1 /run/oomd-sd/e-images.out)
# ctr's default spec (containerd 1.6, oci.populateDefaultUnixSpec) mounts sysfs read-only and no
# cgroup file system: /sys/fs/cgroup is sysfs's own directory (SYSFS_MAGIC 0x62656572), measured
[ "$out" = 62656572 ] || fail "ctr run printed '$out', not sysfs's magic (has ctr's default spec changed?)"; figs="$figs run ${T_MS} ms"
ctr -n oomd images rm "$SD_IMAGE" >/dev/null 2>&1
pass "docker $dv, podman $pv, $(ctr version 2>/dev/null | awk '/Version/{print "containerd " $2; exit}'):$figs"
