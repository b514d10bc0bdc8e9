#!/bin/sh
# build-image.sh [--deb DEB]... [--force]
#
# Builds (or finds in its cache) the sd test bed's Debian 12 root: `debootstrap --variant=minbase
# bookworm` with the packages tests/sd/packages lists (systemd as PID 1, Debian 12's engines) and
# the Depends of each --deb given (so that `dpkg -i` of the project's package needs no network),
# the modules of every cached kernel label (tests/vm/fetch-kernels.sh: 6.1, 6.12, 7) in
# /usr/lib/modules, and the runner stub (guest/oomd-sd-boot, its unit enabled). Made into a raw
# ext4 image by `mke2fs -d` (no loop mount), plus one small busybox initramfs per label that
# loads what the root needs (virtio_pci, virtio_blk, and fuse where it is a module), creates the
# keep-alive memory cgroup on one CPU (see init below) and switch_roots to /sbin/init.
#
# Cache: ${OOMD_SD_CACHE:-/var/cache/oomdelayfs/sd}/<key>/ holding root.img, initrd-<label>.gz,
# kernels (label, kernel release) and packages.txt (what dpkg says is installed). <key> is a
# hash of the package list, the --deb dependencies, the kernel packages and this script with
# guest/; any change builds a new image, otherwise the cached one is used. Images not used for
# 3 days are removed. Builds take turns (flock on the cache). Prints the cache directory.
# The .debs debootstrap downloads are kept in CACHE/debs for the next build.
#
# Needs root, debootstrap, e2fsprogs (mke2fs -d), kmod (depmod), busybox-static, cpio, xz-utils,
# zstd, and Debian's archive (OOMD_DEBIAN_MIRROR, default scripts/debian-mirror.sh's answer).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
KCACHE=${OOMD_KERNEL_CACHE:-/var/cache/oomdelayfs/kernels}
CACHE=${OOMD_SD_CACHE:-/var/cache/oomdelayfs/sd}
DEBS='' FORCE=0
die() { echo "build-image: ERROR: $*" >&2; exit 1; }
note() { echo "build-image: $* ($(($(date +%s) - T0)) s)" >&2; }
T0=$(date +%s)
# one build at a time per cache; a build that waited finds the image the other one made
mkdir -p "$CACHE" 2>/dev/null || die "cannot create $CACHE (run as root or set OOMD_SD_CACHE)"
if [ -z "${OOMD_SD_LOCKED:-}" ] && command -v flock >/dev/null; then
	OOMD_SD_LOCKED=1 exec flock "$CACHE/.lock" "$0" "$@"
fi
while [ $# -gt 0 ]; do
	case $1 in
	--deb) DEBS="$DEBS $2"; shift 2 ;;
	--force) FORCE=1; shift ;;
	*) die "unknown argument $1 (usage: $0 [--deb DEB]... [--force])" ;;
	esac
done
[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot)"
for c in debootstrap mke2fs depmod cpio xz zstd sha256sum; do
	command -v "$c" >/dev/null || die "$c not found (scripts/deps.sh installs it)"
done
BUSYBOX=$(command -v busybox || echo /bin/busybox)
ldd "$BUSYBOX" >/dev/null 2>&1 && die "$BUSYBOX is not static (apt-get install busybox-static)"

# the package list: tests/sd/packages and the packages' dependencies (names only, as the
# archive has them; versions and alternatives dropped, like tests/pkg/test-deb.sh)
pkgs=$(sed 's/#.*//' "$HERE/packages" | tr -s ' \t\n' '\n' | grep -v '^$')
for d in $DEBS; do
	[ -f "$d" ] || die "--deb $d: no such file"
	pkgs="$pkgs
$(dpkg-deb -f "$d" Depends | tr ',' '\n' | sed 's/[(|].*//; s/ //g' | grep -v '^$')"
done
pkgs=$(echo "$pkgs" | sort -u | tr '\n' ' ' | sed 's/ $//')
# the kernels: every label the kernel cache holds, by the package it came from
labels=''
for l in 6.1 6.12 7; do
	[ -f "$KCACHE/$l/version" ] && labels="$labels $l"
done
[ -n "$labels" ] || die "no kernel in $KCACHE (run tests/vm/fetch-kernels.sh)"
kpkgs=$(for l in $labels; do echo "$l=$(cat "$KCACHE/$l/version")"; done | tr '\n' ' ')
key=$( {
	echo "bookworm minbase $pkgs"
	echo "$kpkgs"
	cat "$0" "$HERE"/guest/*
} | sha256sum | cut -c1-16)
OUT=$CACHE/$key
if [ "$FORCE" = 0 ] && [ -f "$OUT/done" ]; then
	touch "$OUT/done"
	echo "$OUT"
	exit 0
fi
# images not used for 3 days (each run touches its done file)
find "$CACHE" -mindepth 2 -maxdepth 2 -name done -mtime +3 2>/dev/null | while read -r f; do
	note "removing $(dirname "$f"), unused for 3 days"
	rm -rf "$(dirname "$f")"
done
mirror=${OOMD_DEBIAN_MIRROR:-$("$TOP/scripts/debian-mirror.sh")}
rm -rf "$OUT"
mkdir -p "$OUT" "$CACHE/debs"
ROOT=$OUT/root
trap 'rm -rf "$ROOT" "$OUT/x"' EXIT

note "debootstrap bookworm (minbase) from $mirror with: $pkgs"
debootstrap --variant=minbase --cache-dir="$CACHE/debs" --include="$(echo "$pkgs" | tr ' ' ',')" \
	bookworm "$ROOT" "$mirror" >"$OUT/debootstrap.log" 2>&1 ||
	{ tail -n 30 "$OUT/debootstrap.log" >&2; die "debootstrap failed (log: $OUT/debootstrap.log)"; }
note "debootstrap done"

# --- the system an operator would have, quiet enough for a serial console
echo oomd-sd >"$ROOT/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\toomd-sd\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$ROOT/etc/hosts"
echo '/dev/vda / ext4 rw,errors=remount-ro 0 0' >"$ROOT/etc/fstab"
# a fixed machine id: no first-boot units, the same id every boot (each boot is a fresh copy)
echo "$key$key" >"$ROOT/etc/machine-id"
# no login prompts on the console the results are read from; no timers that wake up mid-test
for u in getty.target serial-getty@ttyS0.service apt-daily.timer apt-daily-upgrade.timer \
	e2scrub_all.timer e2scrub_reap.service fstrim.timer man-db.timer systemd-tmpfiles-clean.timer \
	podman-auto-update.timer; do
	ln -sf /dev/null "$ROOT/etc/systemd/system/$u"
done
# TCG boots slowly, and slower still on a loaded host (docker.service took 2 min 45 s, the root
# disk's device unit 81 s, containerd failed its 90 s start once at load 25): the engines and
# device units get 10 minutes. DefaultTimeoutStartSec stays 90 s: oomdelayfs.service's own
# start (issue 19: a start that hangs) must time out as it does on an operator's host.
for u in docker containerd; do
	mkdir -p "$ROOT/etc/systemd/system/$u.service.d"
	printf '# tests/sd: TCG is slow\n[Service]\nTimeoutStartSec=600\n' >"$ROOT/etc/systemd/system/$u.service.d/oomd-sd-tcg.conf"
done
mkdir -p "$ROOT/etc/systemd/system.conf.d"
printf '# tests/sd: TCG is slow\n[Manager]\nDefaultDeviceTimeoutSec=600\n' >"$ROOT/etc/systemd/system.conf.d/oomd-sd-tcg.conf"
install -m 0755 "$HERE/guest/oomd-sd-boot" "$ROOT/usr/local/sbin/oomd-sd-boot"
install -m 0644 "$HERE/guest/oomd-sd-boot.service" "$ROOT/etc/systemd/system/oomd-sd-boot.service"
mkdir -p "$ROOT/etc/systemd/system/multi-user.target.wants"
ln -sf /etc/systemd/system/oomd-sd-boot.service "$ROOT/etc/systemd/system/multi-user.target.wants/"
rm -f "$ROOT"/var/cache/apt/archives/*.deb "$ROOT"/var/lib/apt/lists/*_Packages
chroot "$ROOT" dpkg-query -W -f '${Package} ${Version}\n' >"$OUT/packages.txt"

# --- the kernels' modules, from the packages the kernel cache came from
mkdir -p "$OUT/x"
: >"$OUT/kernels"
for l in $labels; do
	pkg=$(cat "$KCACHE/$l/version")
	v=${pkg#linux-image-}
	v=${v%-unsigned}
	case $pkg in
	*-unsigned) mdebs=$pkg ;; # bookworm: one package, modules included
	# Debian 13 on: the modules on their own, modules.builtin and modules.order in linux-base
	# (without them modprobe of a built-in module, e.g. systemd's modprobe@fuse, fails)
	*) mdebs="linux-modules-$v linux-base-$v" ;;
	esac
	rm -rf "$OUT/x/k"
	for mdeb in $mdebs; do
		deb=$(ls "$KCACHE/debs/${mdeb}"_*.deb 2>/dev/null | sort -V | tail -n 1 || true)
		if [ -z "$deb" ]; then
			# with fetch-kernels.sh's own apt configuration (trixie-backports and unstable)
			[ -f "$KCACHE/apt/apt.conf" ] || die "$mdeb is not in $KCACHE/debs and $KCACHE/apt/apt.conf is missing (run tests/vm/fetch-kernels.sh)"
			note "$l: downloading $mdeb"
			d=$(mktemp -d)
			chmod 0777 "$d" # apt's _apt user downloads
			(cd "$d" && APT_CONFIG=$KCACHE/apt/apt.conf apt-get download -q "$mdeb" >"$OUT/download-$l.log" 2>&1) ||
				{ cat "$OUT/download-$l.log" >&2; rm -rf "$d"; die "apt-get download $mdeb failed"; }
			mv "$d"/*.deb "$KCACHE/debs/"
			rm -rf "$d"
			deb=$(ls "$KCACHE/debs/${mdeb}"_*.deb | sort -V | tail -n 1)
		fi
		dpkg-deb -x "$deb" "$OUT/x/k"
	done
	mdir=$(ls -d "$OUT/x/k/lib/modules/$v" "$OUT/x/k/usr/lib/modules/$v" 2>/dev/null | head -n 1 || true)
	[ -n "$mdir" ] || die "$deb holds no modules for $v"
	mkdir -p "$ROOT/usr/lib/modules"
	rm -rf "$ROOT/usr/lib/modules/$v"
	cp -a "$mdir" "$ROOT/usr/lib/modules/$v"
	depmod -b "$ROOT" "$v" || die "depmod $v failed"
	echo "$l $v" >>"$OUT/kernels"
	note "$l: modules of $v from $mdebs"

	# --- the initramfs of this label
	I=$OUT/x/i
	rm -rf "$I"
	mkdir -p "$I/bin" "$I/proc" "$I/sys" "$I/dev" "$I/newroot" "$I/mods"
	cp "$BUSYBOX" "$I/bin/busybox"
	for a in sh mount umount mkdir insmod sleep echo cat switch_root grep; do ln -s busybox "$I/bin/$a"; done
	: >"$I/mods/order"
	# what the root needs, each after its dependencies (modules.dep lists them all, the
	# one to load first last); fuse where it is a module (loaded here, on one CPU: see init)
	for m in virtio_pci virtio_blk fuse; do
		line=$(grep -E "(^|/)$m\.ko(\.xz|\.zst|\.gz)?:" "$ROOT/usr/lib/modules/$v/modules.dep" || true)
		[ -n "$line" ] || continue # built in
		for f in $(echo "$line" | cut -d: -f2 | tr ' ' '\n' | grep -v '^$' | sed -n '1!G;h;$p') \
			"$(echo "$line" | cut -d: -f1)"; do
			b=$(basename "$f" | sed 's/\.\(xz\|zst\|gz\)$//')
			grep -qx "$b" "$I/mods/order" && continue
			src=$ROOT/usr/lib/modules/$v/$f
			case $f in
			*.xz) xz -dc "$src" >"$I/mods/$b" ;;
			*.zst) zstd -qdc "$src" >"$I/mods/$b" ;;
			*.gz) gzip -dc "$src" >"$I/mods/$b" ;;
			*) cp "$src" "$I/mods/$b" ;;
			esac
			echo "$b" >>"$I/mods/order"
		done
	done
	cat >"$I/init" <<'EOF'
#!/bin/sh
# the sd image's initramfs (tests/sd/build-image.sh): load what the root needs, mount it, hand
# over to systemd
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in $(cat /mods/order); do
	insmod "/mods/$m" || echo "oomd-sd-initramfs: insmod $m failed"
done
i=0
while [ ! -b /dev/vda ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
# The kernel boots on one CPU (run-sd.sh: maxcpus=1); the runner brings the others up once the
# system is up. The first memory cgroup switches static keys and the kernel rewrites its own
# code for that; under TCG another vCPU can run a stale copy of that code (tests/vm/init: CI
# saw 6.12 panic in kmem_cache_free). A memory cgroup made here and kept for the whole boot
# keeps the counted keys (memcg_sockets_enabled_key) on, whatever systemd makes and removes.
mount -t cgroup2 cgroup2 /sys/fs/cgroup &&
	echo +memory >/sys/fs/cgroup/cgroup.subtree_control &&
	mkdir -p /sys/fs/cgroup/oomd-sd-keep || echo "oomd-sd-initramfs: no keep-alive memory cgroup"
umount /sys/fs/cgroup
mount -t ext4 -o rw /dev/vda /newroot || { echo "oomd-sd-initramfs: cannot mount /dev/vda"; sleep 2; echo o >/proc/sysrq-trigger; }
mount --move /dev /newroot/dev
umount /sys /proc
exec switch_root /newroot /sbin/init
EOF
	chmod 0755 "$I/init"
	(cd "$I" && find . | cpio -o -H newc -R 0:0 --quiet) | gzip -1 >"$OUT/initrd-$l.gz"
	note "$l: initramfs with $(tr '\n' ' ' <"$I/mods/order")"
done
rm -rf "$OUT/x"
# the kernel trees' /boot and the docs are of no use in a VM that boots with -kernel
rm -rf "$ROOT"/boot/* "$ROOT"/usr/share/doc/* "$ROOT"/usr/share/man/* "$ROOT"/usr/share/locale/*

# --- the raw ext4 image: what the root holds plus room for the engines' images and logs
used=$(du -sm "$ROOT" | cut -f1)
size=$((used + ${OOMD_SD_HEADROOM_MB:-2048}))
mke2fs -q -t ext4 -L oomd-sd -d "$ROOT" "$OUT/root.img.new" "${size}M" >/dev/null ||
	die "mke2fs -d failed"
mv "$OUT/root.img.new" "$OUT/root.img"
rm -rf "$ROOT"
date -u +%FT%TZ >"$OUT/done"
note "image $OUT/root.img: ${used} MiB used of ${size} MiB, $(du -sm "$OUT/root.img" | cut -f1) MiB on disk"
echo "$OUT"
