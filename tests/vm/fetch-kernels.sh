#!/bin/sh
# fetch-kernels.sh [CACHE] - fetch Debian's cloud kernels for the VM scenarios.
#
# Three kernels, one label each:
#   6.1   the newest linux-image-6.1.0-*-cloud-amd64-unsigned      (bookworm, the system's apt)
#   6.12  the newest linux-image-6.12.*+deb12-cloud-amd64-unsigned (bookworm, the system's apt)
#   7     the newest linux-image-7.*+debNN-cloud-amd64 of trixie-backports and unstable,
#         whichever is newer, through an apt configuration of this script's own
#         (CACHE/apt/: its own sources, lists and package cache) that names the mirror the
#         system's apt sources already use for Debian; the system's sources are not touched.
#         Since Debian 13 the kernel is split: linux-binary-<v> holds
#         /usr/lib/modules/<v>/vmlinuz, linux-base-<v> its config, linux-modules-<v> the modules
#         (fetched only where FUSE is a module).
# into CACHE (default ${OOMD_KERNEL_CACHE:-/var/cache/oomdelayfs/kernels}) and extracts, per label:
#   CACHE/<label>/vmlinuz     the kernel
#   CACHE/<label>/config      its configuration
#   CACHE/<label>/fuse.ko     FUSE module (only where FUSE is a module: 6.1), uncompressed
#   CACHE/<label>/version     the package name it came from
# Prints which package each label uses. Packages already in the cache are not downloaded again.
# When apt cannot list packages (no network, no apt-get update) but the cache holds a kernel,
# that kernel is used with a warning. Runs of this script on one cache take turns (flock).
set -eu

CACHE=${1:-${OOMD_KERNEL_CACHE:-/var/cache/oomdelayfs/kernels}}

die() { echo "fetch-kernels: ERROR: $*" >&2; exit 1; }
note() { echo "fetch-kernels: $*" >&2; }

mkdir -p "$CACHE" 2>/dev/null || die "cannot create kernel cache $CACHE (run as root or set OOMD_KERNEL_CACHE)"
[ -w "$CACHE" ] || die "kernel cache $CACHE is not writable (run as root or set OOMD_KERNEL_CACHE)"
command -v dpkg-deb >/dev/null || die "dpkg-deb not found"

# one fetch at a time per cache: run-vm.sh may run from several build trees at once
if [ -z "${OOMD_FETCH_LOCKED:-}" ] && command -v flock >/dev/null; then
	OOMD_FETCH_LOCKED=1 exec flock "$CACHE/.lock" "$0" "$CACHE"
fi

# newest package matching a regex, by version sort of the name (apt as $APT_CONFIG sets it up)
newest() {
	apt-cache search --names-only "$1" 2>/dev/null | awk '{print $1}' | grep -E "$1" | sort -V | tail -n 1
}

# The apt configuration for suites the system does not use: its own sources, lists, status and
# package cache under CACHE/apt, Debian's archive keyring. The mirror is the one the system's
# apt sources name for its own release (apt-get indextargets reads both source formats).
# Prints the configuration file's path.
newer_suites_apt() {
	mirror=$("$(dirname "$0")/../../scripts/debian-mirror.sh") || return 1
	keyring=/usr/share/keyrings/debian-archive-keyring.gpg
	[ -f "$keyring" ] || { note "WARNING: $keyring is missing (package debian-archive-keyring)"; return 1; }
	a=$CACHE/apt
	mkdir -p "$a/lists/partial" "$a/archives/partial" "$a/sources.list.d" "$a/preferences.d"
	: >>"$a/status"
	{
		echo "deb [signed-by=$keyring] $mirror trixie-backports main"
		echo "deb [signed-by=$keyring] $mirror unstable main"
	} >"$a/sources.list"
	{
		echo "Dir::Etc::SourceList \"$a/sources.list\";"
		echo "Dir::Etc::SourceParts \"$a/sources.list.d\";"
		echo "Dir::Etc::Preferences \"$a/preferences\";"
		echo "Dir::Etc::PreferencesParts \"$a/preferences.d\";"
		echo "Dir::State::Lists \"$a/lists\";"
		echo "Dir::State::status \"$a/status\";"
		echo "Dir::Cache \"$a\";"
		echo "Dir::Cache::archives \"$a/archives\";"
		echo "Acquire::Languages \"none\";"
	} >"$a/apt.conf"
	note "7: looking in trixie-backports and unstable on $mirror"
	if ! APT_CONFIG=$a/apt.conf apt-get update -qq >"$a/update.log" 2>&1; then
		note "WARNING: apt-get update of trixie-backports/unstable failed: $(tail -n 2 "$a/update.log" | tr '\n' ' ')"
		return 1
	fi
	echo "$a/apt.conf"
}

# download_debs DIR PKG...: apt-get download into DIR
download_debs() {
	d=$1
	shift
	tmp=$(mktemp -d)
	# _apt drops privileges to download: give it a directory it can write
	chmod 0777 "$tmp"
	(cd "$tmp" && apt-get download -q "$@" 2>&1 | grep -v -e 'Download is performed unsandboxed' -e '^W: .*_apt' >&2) || :
	for p in "$@"; do
		f=$(ls "$tmp"/"${p}"_*.deb 2>/dev/null | head -n 1 || true)
		[ -n "$f" ] || { rm -rf "$tmp"; die "apt-get download $p failed (network? apt sources?)"; }
		mv "$f" "$d"/
	done
	rm -rf "$tmp"
}

# fetch_one LABEL REGEX: the newest package matching REGEX, extracted into CACHE/LABEL.
# From Debian 13 on, linux-image-<v> is a meta package: the kernel is in linux-binary-<v>, its
# config in linux-base-<v>, the modules in linux-modules-<v> (fetched only where FUSE is one).
fetch_one() {
	label=$1 re=$2
	dir=$CACHE/$label
	pkg=$(newest "$re" || true)
	if [ -z "$pkg" ]; then
		if [ -f "$dir/vmlinuz" ]; then
			note "WARNING: apt knows no package matching '$re'; $label: using cached $(cat "$dir/version" 2>/dev/null)"
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
	v=${pkg#linux-image-}
	case $v in
	*-unsigned) debs=$pkg ;;
	*) debs="linux-binary-$v linux-base-$v" ;;
	esac
	mkdir -p "$CACHE/debs"
	need=''
	for p in $debs; do
		ls "$CACHE/debs/${p}"_*.deb >/dev/null 2>&1 || need="$need $p"
	done
	if [ -n "$need" ]; then
		note "$label: downloading$need"
		# shellcheck disable=SC2086
		download_debs "$CACHE/debs" $need
	fi
	x=$(mktemp -d)
	for p in $debs; do
		deb=$(ls "$CACHE/debs/${p}"_*.deb | sort -V | tail -n 1)
		note "$label: extracting $(basename "$deb")"
		dpkg-deb -x "$deb" "$x" || { rm -rf "$x"; die "cannot extract $deb"; }
	done
	vmlinuz=$(ls "$x"/boot/vmlinuz-* "$x"/usr/lib/modules/*/vmlinuz 2>/dev/null | head -n 1 || true)
	[ -n "$vmlinuz" ] || { rm -rf "$x"; die "$debs hold no vmlinuz"; }
	cfg=$(ls "$x"/boot/config-* "$x"/usr/lib/modules/*/config 2>/dev/null | head -n 1 || true)
	if [ -n "$cfg" ] && grep -q '^CONFIG_FUSE_FS=m' "$cfg" && [ "$debs" != "$pkg" ]; then
		mods=linux-modules-$v
		ls "$CACHE/debs/${mods}"_*.deb >/dev/null 2>&1 || download_debs "$CACHE/debs" "$mods"
		dpkg-deb -x "$(ls "$CACHE/debs/${mods}"_*.deb | sort -V | tail -n 1)" "$x" ||
			{ rm -rf "$x"; die "cannot extract $mods"; }
	fi
	rm -rf "$dir.new"
	mkdir -p "$dir.new"
	cp "$vmlinuz" "$dir.new/vmlinuz"
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

# Which labels: the three, or those OOMD_KERNELS names (run-vm.sh passes its --kernel list).
want() { case " ${OOMD_KERNELS:-6.1 6.12 7} " in *" $1 "*) return 0 ;; esac; return 1; }

if want 6.1; then fetch_one 6.1 '^linux-image-6\.1\.0-[0-9]+-cloud-amd64-unsigned$'; fi
if want 6.12; then fetch_one 6.12 '^linux-image-6\.12\.[0-9]+\+deb12-cloud-amd64-unsigned$'; fi
if want 7; then
	if conf=$(newer_suites_apt); then
		APT_CONFIG=$conf fetch_one 7 '^linux-image-7\.[0-9]+\.[0-9]+\+deb[0-9]+-cloud-amd64$'
	elif [ -f "$CACHE/7/vmlinuz" ]; then
		note "WARNING: cannot list trixie-backports/unstable; 7: using cached $(cat "$CACHE/7/version" 2>/dev/null)"
	else
		die "cannot list trixie-backports/unstable and no 7.x kernel is cached in $CACHE"
	fi
fi
