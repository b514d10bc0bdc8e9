#!/bin/sh
# Builds the Debian package from this tree: copies the tracked (and new, not ignored)
# files into a scratch directory, puts packaging/debian in place as debian/, and runs
# dpkg-buildpackage -b -us -uc there. The .deb, .buildinfo and .changes land in OUTDIR.
# Usage: scripts/build-deb.sh [OUTDIR]   (default: build-deb)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-$top/build-deb}" && cd "${1:-$top/build-deb}" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/oomdelayfs-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
src=$work/oomdelayfs
mkdir -p "$src"
(cd "$top" && git ls-files -z --cached --others --exclude-standard) |
	(cd "$top" && xargs -0 tar -cf - --no-recursion) | tar -xf - -C "$src"
rm -rf "$src/debian"
cp -r "$src/packaging/debian" "$src/debian"
(cd "$src" && dpkg-buildpackage -b -us -uc -j"$(nproc)" >"$work/build.log" 2>&1) || {
	tail -n 40 "$work/build.log" >&2
	echo "build-deb: dpkg-buildpackage failed" >&2
	exit 1
}
cp "$work"/*.deb "$work"/*.buildinfo "$work"/*.changes "$out"/
ls "$out"/*.deb
