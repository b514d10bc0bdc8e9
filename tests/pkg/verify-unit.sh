#!/bin/sh
# verify-unit.sh BUILD_DIR: `systemd-analyze verify` of the unit meson configured
# (BUILD_DIR/packaging/oomdelayfs.service), its ExecStart= pointed at the built daemon (verify
# checks that it is executable). Fails on a non-zero exit and on any line verify prints:
# systemd only warns about unknown or misspelt settings.
# --man=no: the man page is not installed here.
set -eu
build=$1
command -v systemd-analyze >/dev/null || { echo "verify-unit: FAIL systemd-analyze not found (package systemd)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed -e "s#^ExecStart=[^ ]*/oomdelayfs\( \|$\)#ExecStart=$build/daemon/oomdelayfs\1#" \
	"$build/packaging/oomdelayfs.service" >"$tmp/oomdelayfs.service"
rc=0
out=$(systemd-analyze verify --man=no "$tmp/oomdelayfs.service" 2>&1) || rc=$?
if [ "$rc" != 0 ] || [ -n "$out" ]; then
	echo "verify-unit: FAIL (exit $rc): $out"
	exit 1
fi
echo "verify-unit: PASS systemd-analyze verify: no complaint about oomdelayfs.service"
