#!/bin/sh
# fetch-kernels.sh [CACHE] - fetch Debian's cloud kernels for the VM scenarios.
#
# Downloads (apt-get download) the newest linux-image-6.1.0-*-cloud-amd64-unsigned and the
# newest linux-image-6.12.*+deb12-cloud-amd64-unsigned into CACHE (default
# ${OOMD_KERNEL_CACHE:-/var/cache/oomdelayfs/kernels}) and extracts, per kernel label:
#   CACHE/<label>/vmlinuz     the kernel
#   CACHE/<label>/fuse.ko     FUSE module (only where FUSE is a module: 6.1), uncompressed
#   CACHE/<label>/version     the package name it came from
# Packages already in the cache are not downloaded again. When apt cannot list packages (no
# network, no apt-get update) but the cache holds a kernel, that kernel is used with a warning.
set -eu

CACHE=${1:-${OOMD_KERNEL_CACHE:-/var/cache/oomdelayfs/kernels}}

die() { echo "fetch-kernels: ERROR: $*" >&2; exit 1; }
note() { echo "fetch-kernels: $*" >&2; }

mkdir -p "$CACHE" 2>/dev/null || die "cannot create kernel cache $CACHE (run as root or set OOMD_KERNEL_CACHE)"
[ -w "$CACHE" ] || die "kernel cache $CACHE is not writable (run as root or set OOMD_KERNEL_CACHE)"
command -v dpkg-deb >/dev/null || die "dpkg-deb not found"

# newest package matching a regex, by version sort of the name
newest() {
	apt-cache search --names-only "$1" 2>/dev/null | awk '{print $1}' | grep -E "$1" | sort -V | tail -n 1
}

fetch_one() { # label regex
	label=$1 re=$2
	dir=$CACHE/$label
	pkg=$(newest "$re" || true)
	if [ -z "$pkg" ]; then
		if [ -f "$dir/vmlinuz" ]; then
			note "WARNING: apt knows no package matching '$re'; using cached $(cat "$dir/version" 2>/dev/null)"
			return 0
		fi
		die "no package matching '$re' is known to apt and none is cached in $CACHE.
  Run 'apt-get update' (as root) with Debian 12 (bookworm) main and bookworm-security/updates
  sources enabled, or copy the .deb into $CACHE."
	fi
	if [ -f "$dir/vmlinuz" ] && [ "$(cat "$dir/version" 2>/dev/null)" = "$pkg" ]; then
		note "$label: $pkg (cached)"
		return 0
	fi
	deb=$(ls "$CACHE"/"${pkg}"_*.deb 2>/dev/null | sort -V | tail -n 1 || true)
	if [ -z "$deb" ]; then
		note "$label: downloading $pkg"
		tmp=$(mktemp -d)
		# _apt drops privileges to download: give it a directory it can write
		chmod 0777 "$tmp"
		if ! (cd "$tmp" && apt-get download -q "$pkg" 2>&1 | grep -v -e 'Download is performed unsandboxed' -e '^W: .*_apt' >&2); then
			:
		fi
		deb=$(ls "$tmp"/"${pkg}"_*.deb 2>/dev/null | head -n 1 || true)
		if [ -z "$deb" ]; then
			rm -rf "$tmp"
			die "apt-get download $pkg failed (network? apt sources?)"
		fi
		mv "$deb" "$CACHE"/
		rm -rf "$tmp"
		deb=$CACHE/$(basename "$deb")
	fi
	note "$label: extracting $(basename "$deb")"
	x=$(mktemp -d)
	dpkg-deb -x "$deb" "$x" || { rm -rf "$x"; die "cannot extract $deb"; }
	vmlinuz=$(ls "$x"/boot/vmlinuz-* 2>/dev/null | head -n 1 || true)
	[ -n "$vmlinuz" ] || { rm -rf "$x"; die "$deb holds no /boot/vmlinuz-*"; }
	rm -rf "$dir.new"
	mkdir -p "$dir.new"
	cp "$vmlinuz" "$dir.new/vmlinuz"
	cfg=$(ls "$x"/boot/config-* 2>/dev/null | head -n 1 || true)
	[ -z "$cfg" ] || cp "$cfg" "$dir.new/config"
	ko=$(find "$x" -path '*/kernel/fs/fuse/fuse.ko*' | head -n 1)
	if [ -n "$ko" ]; then
		case $ko in
		*.ko) cp "$ko" "$dir.new/fuse.ko" ;;
		*.ko.xz) xz -dc "$ko" >"$dir.new/fuse.ko" ;;
		*.ko.zst) zstd -qdc "$ko" >"$dir.new/fuse.ko" ;;
		*.ko.gz) gzip -dc "$ko" >"$dir.new/fuse.ko" ;;
		*) rm -rf "$x"; die "unknown module compression: $ko" ;;
		esac
	elif [ -n "$cfg" ] && ! grep -q '^CONFIG_FUSE_FS=y' "$cfg"; then
		rm -rf "$x"
		die "$pkg has neither a built-in FUSE nor fuse.ko"
	fi
	echo "$pkg" >"$dir.new/version"
	rm -rf "$x" "$dir"
	mv "$dir.new" "$dir"
	note "$label: $pkg ready in $dir"
}

fetch_one 6.1 '^linux-image-6\.1\.0-[0-9]+-cloud-amd64-unsigned$'
fetch_one 6.12 '^linux-image-6\.12\.[0-9]+\+deb12-cloud-amd64-unsigned$'
