#!/bin/sh
# The package test (issue 14): builds the .deb (scripts/build-deb.sh), runs lintian on it
# (no errors allowed), installs it with dpkg into a clean Debian 12 system made by debootstrap
# from Debian's archive, and there runs the installed oomdelayfs: --version, --help (with its
# exit statuses), `status` without a daemon (exit 1), the shipped configuration file with every
# key uncommented (must parse), then removes and purges the package.
#
# The clean system: `debootstrap --variant=minbase bookworm` with the package's dependencies
# included, made once and kept as a tarball in $OOMD_PKG_CACHE (default
# /var/cache/oomdelayfs/pkg), named by the dependency list; each run unpacks a fresh copy of
# it, so nothing of an earlier run remains. Delete the tarball to bootstrap again.
# Needs root and, for the first run, Debian's archive: OOMD_DEBIAN_MIRROR, default the mirror
# the system's apt sources name (scripts/debian-mirror.sh).
# Usage: tests/pkg/test-deb.sh [OUTDIR]   (default: build-deb)
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$top/build-deb}
cache=${OOMD_PKG_CACHE:-/var/cache/oomdelayfs/pkg}
mirror=${OOMD_DEBIAN_MIRROR:-$("$top/scripts/debian-mirror.sh")}
t0=$(date +%s)
say() { echo "test-deb: $* ($(($(date +%s) - t0)) s)"; }
die() { echo "test-deb: FAIL $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot)"

rm -f "$out"/oomdelayfs_*.deb "$out"/oomdelayfs*.changes
"$top/scripts/build-deb.sh" "$out" >/dev/null
deb=$(ls "$out"/oomdelayfs_*_*.deb)
say "built $(basename "$deb")"

lintian --fail-on error --suppress-tags package-supports-alternative-init-but-no-init.d-script \
	"$out"/oomdelayfs_*.changes >"$out/lintian.txt" 2>&1 || { cat "$out/lintian.txt"; die "lintian errors"; }
say "lintian: $(grep -c '^E:' "$out/lintian.txt") errors, $(grep -c '^W:' "$out/lintian.txt") warnings"

# the dependencies, as the archive names them (without versions or alternatives)
deps=$(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed 's/[(|].*//; s/ //g' | grep -v '^$' | sort | tr '\n' ',' | sed 's/,$//')
key=$(printf '%s' "bookworm minbase $deps" | sha256sum | cut -c1-16)
tarball=$cache/bookworm-minbase-$key.tar
if [ ! -f "$tarball" ]; then
	mkdir -p "$cache"
	boot=$(mktemp -d "${TMPDIR:-/tmp}/oomd-boot.XXXXXX")
	say "debootstrap bookworm (minbase, with $deps) from $mirror"
	debootstrap --variant=minbase --include="$deps" bookworm "$boot" "$mirror" >"$out/debootstrap.log" 2>&1 ||
		{ tail -20 "$out/debootstrap.log"; rm -rf "$boot"; die "debootstrap failed"; }
	tar -C "$boot" -cf "$tarball.new" . && mv "$tarball.new" "$tarball"
	rm -rf "$boot"
	say "clean system kept in $tarball"
fi
root=$(mktemp -d "${TMPDIR:-/tmp}/oomd-chroot.XXXXXX")
trap 'rm -rf "$root"' EXIT
tar -C "$root" -xf "$tarball"
say "fresh clean system unpacked"
dpkg-query --admindir="$root/var/lib/dpkg" -W oomdelayfs >/dev/null 2>&1 && die "oomdelayfs already in the clean system"
cp "$deb" "$root/tmp/"
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 "$@"; }
in_root dpkg -i "/tmp/$(basename "$deb")" >"$out/dpkg-i.log" 2>&1 || { cat "$out/dpkg-i.log"; die "dpkg -i failed"; }
say "installed"

v=$(in_root oomdelayfs --version) || die "--version exited $?"
ver=$(dpkg-deb -f "$deb" Version)
echo "$v" | grep -q "^oomdelayfs ${ver%%-*} " || die "--version says '$v', the package is $ver"
in_root oomdelayfs --help >"$out/help.txt" || die "--help exited $?"
grep -q '^Exit status:' "$out/help.txt" || die "--help has no exit statuses"
for c in 0 1 2 3 4 5 6; do grep -q "^  $c  " "$out/help.txt" || die "--help lacks exit status $c"; done
src=$(in_root sh -c 'oomdelayfs status >/dev/null 2>&1; echo $?')
[ "$src" = 1 ] || die "status without a daemon exited $src, not 1"
for f in /usr/bin/oomdelayfs /lib/systemd/system/oomdelayfs.service /usr/share/man/man8/oomdelayfs.8.gz \
	/etc/oomdelayfs/oomdelayfs.conf /etc/oomdelayfs/runtime.conf \
	/lib/systemd/system/docker.service.d/oomdelayfs.conf /lib/systemd/system/containerd.service.d/oomdelayfs.conf \
	/lib/systemd/system/podman.service.d/oomdelayfs.conf; do
	[ -e "$root$f" ] || die "$f not installed"
done
for c in oomdelayfs.conf runtime.conf; do
	in_root dpkg-query -W -f='${Conffiles}\n' oomdelayfs | grep -q "/etc/oomdelayfs/$c" ||
		die "/etc/oomdelayfs/$c is not a conffile"
done
# the unit runs the daemon with no option (the configuration file's keys win)
grep -qx 'ExecStart=/usr/bin/oomdelayfs' "$root/lib/systemd/system/oomdelayfs.service" ||
	die "the unit's ExecStart is not the bare daemon: $(grep ExecStart= "$root/lib/systemd/system/oomdelayfs.service")"
# the shim's runtime is Debian 12's runc, by its path
grep -qx 'path=/usr/sbin/runc' "$root/etc/oomdelayfs/runtime.conf" || die "runtime.conf does not name /usr/sbin/runc"
# every key the shipped file documents, uncommented, must parse (exit 2 is a bad file)
sed 's/^#\([a-z-]* = \)/\1/' "$root/etc/oomdelayfs/oomdelayfs.conf" >"$root/tmp/all.conf"
nkeys=$(grep -c '^[a-z-]* = ' "$root/tmp/all.conf")
crc=$(in_root sh -c 'oomdelayfs --config /tmp/all.conf >/tmp/all.err 2>&1; echo $?')
[ "$crc" != 2 ] || die "the shipped configuration, uncommented, is refused: $(cat "$root/tmp/all.err")"
in_root dpkg --purge oomdelayfs >"$out/dpkg-purge.log" 2>&1 || { cat "$out/dpkg-purge.log"; die "purge failed"; }
[ -e "$root/etc/oomdelayfs" ] && die "purge left /etc/oomdelayfs: $(ls -A "$root/etc/oomdelayfs")"
[ -e "$root/lib/systemd/system/docker.service.d/oomdelayfs.conf" ] && die "purge left the docker drop-in"
[ -e "$root/usr/bin/oomdelayfs" ] && die "purge left the binary"
say "PASS $(echo "$v" | cut -d' ' -f1-2) installed in a clean bookworm (debootstrap), --version, --help (exit statuses 0-6)," \
	"status without a daemon exit 1, shipped configuration ($nkeys keys uncommented) accepted (exit $crc), purged"
