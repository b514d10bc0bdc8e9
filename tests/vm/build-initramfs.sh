#!/bin/sh
# build-initramfs.sh --kernel LABEL --build-dir DIR --out FILE [--cache CACHE] [--containers]
#
# Builds a gzip'd newc cpio holding: busybox-static with its applet links, the project's built
# binaries (daemon/oomdelayfs if built, tests/vm/odt and hellofs), fusermount3 (setuid root),
# the shared libraries they need and the dynamic loader, fuse.ko where the kernel has FUSE as a
# module, a minimal /etc, the VM runner (/init), lib.sh and the scenarios.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
LABEL='' BUILD='' OUT='' CONTAINERS=0
CACHE=${OOMD_KERNEL_CACHE:-/var/cache/oomdelayfs/kernels}

die() { echo "build-initramfs: ERROR: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
	case $1 in
	--kernel) LABEL=$2; shift 2 ;;
	--build-dir) BUILD=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--cache) CACHE=$2; shift 2 ;;
	--containers) CONTAINERS=1; shift ;;
	*) die "unknown argument $1" ;;
	esac
done
[ -n "$LABEL" ] && [ -n "$BUILD" ] && [ -n "$OUT" ] || die "usage: $0 --kernel LABEL --build-dir DIR --out FILE [--cache DIR] [--containers]"

BUSYBOX=$(command -v busybox || true)
[ -n "$BUSYBOX" ] || BUSYBOX=/bin/busybox
[ -x "$BUSYBOX" ] || die "busybox not found (apt-get install busybox-static)"
file_is_static() { ! ldd "$1" >/dev/null 2>&1; }
file_is_static "$BUSYBOX" || die "$BUSYBOX is not static (apt-get install busybox-static)"
FUSERMOUNT=$(command -v fusermount3 || true)
[ -n "$FUSERMOUNT" ] || die "fusermount3 not found (apt-get install fuse3)"
command -v cpio >/dev/null || die "cpio not found (apt-get install cpio)"

ROOT=$(mktemp -d)
chmod 0755 "$ROOT"
trap 'rm -rf "$ROOT"' EXIT
mkdir -p "$ROOT"/bin "$ROOT"/etc "$ROOT"/proc "$ROOT"/sys "$ROOT"/dev "$ROOT"/tmp "$ROOT"/run \
	"$ROOT"/root "$ROOT"/mnt "$ROOT"/lib/modules "$ROOT"/oomd/scenarios "$ROOT"/usr
ln -s bin "$ROOT"/sbin
ln -s ../bin "$ROOT"/usr/bin
ln -s ../bin "$ROOT"/usr/sbin
chmod 1777 "$ROOT"/tmp

cp "$BUSYBOX" "$ROOT"/bin/busybox
for a in $("$BUSYBOX" --list); do
	[ "$a" = busybox ] || ln -s busybox "$ROOT/bin/$a"
done

# copy a dynamically linked binary and every library it needs (same paths as on the host)
copy_libs() {
	ldd "$1" 2>/dev/null | awk '/=> \//{print $3} /^[ \t]*\//{print $1}' | while read -r lib; do
		[ -e "$ROOT$lib" ] && continue
		mkdir -p "$ROOT$(dirname "$lib")"
		cp -L "$lib" "$ROOT$lib"
	done
}
add_bin() { # path [mode]
	rm -f "$ROOT/bin/$(basename "$1")"
	cp -L "$1" "$ROOT/bin/$(basename "$1")"
	chmod "${2:-0755}" "$ROOT/bin/$(basename "$1")"
	copy_libs "$1"
}

add_bin "$FUSERMOUNT" 4755
# glibc dlopens libgcc_s for pthread_cancel (libfuse cancels its workers on exit); ldd cannot see it
for lib in /lib/x86_64-linux-gnu/libgcc_s.so.1 /usr/lib/x86_64-linux-gnu/libgcc_s.so.1; do
	[ -e "$lib" ] && { mkdir -p "$ROOT$(dirname "$lib")"; cp -L "$lib" "$ROOT$lib"; break; }
done
for p in tests/vm/odt tests/vm/hellofs; do
	[ -x "$BUILD/$p" ] || die "$BUILD/$p not built (run: meson compile -C $BUILD)"
done
# every test program of tests/vm/progs (tests/vm/meson.build lists them)
for p in "$BUILD"/tests/vm/*; do
	[ -f "$p" ] && [ -x "$p" ] && add_bin "$p"
done
# cgroup-tools, for the legacy-tools scenarios (libcgroup finds the cgroup2 mount itself)
for p in /usr/bin/cgset /usr/bin/cgget /usr/bin/cgcreate /usr/bin/cgexec; do
	[ -x "$p" ] && add_bin "$p"
done
if [ -x "$BUILD/daemon/oomdelayfs" ]; then
	add_bin "$BUILD/daemon/oomdelayfs"
fi
# host tools for an experiment (e.g. OOMD_VM_EXTRA_BINS=/usr/bin/strace), with their libraries
for p in ${OOMD_VM_EXTRA_BINS:-}; do
	[ -x "$p" ] || die "OOMD_VM_EXTRA_BINS: $p is not an executable"
	add_bin "$p"
done
# container runtimes (Debian's runc and crun) and the project's OCI hook and runtime shim, for the
# c-* scenarios (--containers); a runtime that is not installed is left out and its scenario skips
if [ "$CONTAINERS" = 1 ]; then
	for p in /usr/sbin/runc /usr/bin/crun "$BUILD/oci/oomdelayfs-oci-hook" "$BUILD/oci/oomdelayfs-runtime"; do
		[ -x "$p" ] && add_bin "$p"
	done
fi

if [ -f "$CACHE/$LABEL/fuse.ko" ]; then
	cp "$CACHE/$LABEL/fuse.ko" "$ROOT"/lib/modules/fuse.ko
fi

cat >"$ROOT"/etc/passwd <<'EOF'
root:x:0:0:root:/root:/bin/sh
user:x:1000:1000:test user:/tmp:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
EOF
cat >"$ROOT"/etc/group <<'EOF'
root:x:0:
user:x:1000:
nogroup:x:65534:
EOF
: >"$ROOT"/etc/fuse.conf
ln -s /proc/self/mounts "$ROOT"/etc/mtab
echo "$LABEL" >"$ROOT"/etc/oomd-kernel

cp "$HERE"/init "$ROOT"/init
chmod 0755 "$ROOT"/init
cp "$HERE"/lib.sh "$HERE"/containers.sh "$ROOT"/oomd/
cp "$HERE"/scenarios/*.sh "$ROOT"/oomd/scenarios/

mkdir -p "$(dirname "$OUT")"
(cd "$ROOT" && find . | cpio -o -H newc -R 0:0 --quiet) | gzip -1 >"$OUT.tmp"
mv "$OUT.tmp" "$OUT"
