#!/bin/sh
# Installs every Debian 12 package oomdelayfs needs to build, test and run its VM
# scenarios. Idempotent; needs root and Debian's package archive.
set -eu
PKGS="gcc clang meson ninja-build pkg-config libfuse3-dev fuse3 libglib2.0-dev
libcgroup-dev cgroup-tools libcriterion-dev qemu-system-x86 busybox-static cpio
kmod zstd xz-utils attr help2man libjson-glib-dev libsystemd-dev systemd
debhelper dpkg-dev fakeroot lintian debootstrap runc crun python3-yaml
e2fsprogs python3"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "deps: missing packages:$missing; run as root to install them" >&2
	exit 1
fi
echo "deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
