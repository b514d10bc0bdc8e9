#!/bin/sh
# debian-mirror.sh: prints the Debian mirror the system's apt sources name for this system's own
# release (e.g. bookworm), so that tools needing other suites or a debootstrap reuse it and no
# mirror address is written into the tree. apt-get indextargets reads both source formats
# (one-line .list and deb822 .sources). Exit 1 with a message when there is none.
set -eu
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ -n "$codename" ] || { echo "debian-mirror: /etc/os-release names no VERSION_CODENAME" >&2; exit 1; }
mirror=$(apt-get indextargets --format '$(RELEASE) $(REPO_URI)' 'Identifier: Packages' 2>/dev/null |
	awk -v c="$codename" '$1 == c { print $2; exit }')
[ -n "$mirror" ] || { echo "debian-mirror: the system's apt sources name no mirror for $codename" >&2; exit 1; }
echo "$mirror"
