# s-xattr (issue 10, deliverables 3 and 7): through the shadow, extended attributes are what the
# caller could see on the real tree, and the daemon's own names (<namespace>.oomdelayfs.*) pass in
# neither direction, for root neither. uid 1000, owner of the cgroup directory: listxattr shows
# neither trusted.* (set by root on the real tree) nor the daemon's names; getxattr of them is
# ENODATA; setxattr and removexattr of the daemon's name are EPERM (as trusted.* is for the
# unprivileged) and the real value stays as it was (on the real tree the owner could forge it:
# that is what the shadow refuses); trusted.* cannot be set. The legitimate actions beside: the
# owner's user.* attribute round-trips (set, get, list, remove, and the real tree holds it), and
# root sees and sets trusted.* through the shadow.
# timeout: 60
. /oomd/lib.sh
start_daemon /shadow
U=1000
cg=$(mkcg xa); s=/shadow${cg#$CGROOT}
cat "$s/memory.oom_control" >/dev/null || fail "no memory.oom_control in $s" # the daemon knows it first
chown "$U:$U" "$cg" || fail "chown $cg"
as() { odt asuser "$U" "$U" "$@"; }
odt xattr set "$cg" trusted.admin 1 || fail "root cannot set trusted.admin on the real tree"
odt xattr set "$cg" user.oomdelayfs.state "limit=max hold=1" || fail "cannot set user.oomdelayfs.state"
odt xattr set "$cg" trusted.oomdelayfs.state "limit=max" || fail "cannot set trusted.oomdelayfs.state"
# errno NAME CMD...: CMD must fail with the strerror text NAME
errno_is() {
	_want=$1; shift
	_o=$("$@" 2>&1) && fail "'$*' succeeded ($_o)"
	case $_o in *"$_want"*) ;; *) fail "'$*': '$_o', not '$_want'" ;; esac
}
# the kernel's own view for uid 1000 on the real tree, to compare with
rl=$(as odt xattr list "$cg" | tr '\n' ' ')
echo "$rl" | grep -q 'trusted\.' && fail "the kernel lists trusted.* to uid $U: $rl"
[ "$(as odt xattr get "$cg" user.oomdelayfs.state)" = "limit=max hold=1" ] ||
	fail "on the real tree the owner cannot read user.oomdelayfs.state (the attack this guards against is gone?)"

# uid 1000 through the shadow
sl=$(as odt xattr list "$s" | tr '\n' ' ')
case "$sl" in *trusted.*|*oomdelayfs.*) fail "uid $U lists '$sl' through the shadow" ;; esac
errno_is "No data available" as odt xattr get "$s" trusted.admin
errno_is "No data available" as odt xattr get "$s" user.oomdelayfs.state
errno_is "No data available" as odt xattr get "$s" trusted.oomdelayfs.state
errno_is "Operation not permitted" as odt xattr set "$s" user.oomdelayfs.state "limit=max hold=1 forged"
errno_is "Operation not permitted" as odt xattr rm "$s" user.oomdelayfs.state
errno_is "Operation not permitted" odt xattr rm "$s" user.oomdelayfs.state
errno_is "Operation not permitted" as odt xattr set "$s" trusted.admin 2
[ "$(odt xattr get "$cg" user.oomdelayfs.state)" = "limit=max hold=1" ] || fail "the daemon's state changed: $(odt xattr get "$cg" user.oomdelayfs.state)"
[ "$(odt xattr get "$cg" trusted.admin)" = 1 ] || fail "trusted.admin changed"
# legitimate: the owner's user.* round-trips
as odt xattr set "$s" user.note hello || fail "the owner cannot set user.note through the shadow"
[ "$(as odt xattr get "$s" user.note)" = hello ] || fail "user.note does not read back through the shadow"
[ "$(odt xattr get "$cg" user.note)" = hello ] || fail "user.note is not on the real tree"
as odt xattr list "$s" | grep -qx user.note || fail "user.note not listed through the shadow"
as odt xattr rm "$s" user.note || fail "the owner cannot remove user.note through the shadow"
errno_is "No data available" odt xattr get "$cg" user.note

# root through the shadow: trusted.* as on the real tree, never the daemon's names
rootl=$(odt xattr list "$s" | tr '\n' ' ')
echo "$rootl" | grep -q 'trusted.admin' || fail "root does not see trusted.admin through the shadow: $rootl"
case "$rootl" in *oomdelayfs.*) fail "root lists the daemon's names: $rootl" ;; esac
[ "$(odt xattr get "$s" trusted.admin)" = 1 ] || fail "root cannot read trusted.admin through the shadow"
errno_is "No data available" odt xattr get "$s" trusted.oomdelayfs.state
errno_is "Operation not permitted" odt xattr set "$s" trusted.oomdelayfs.state forged
odt xattr set "$s" trusted.root2 2 || fail "root cannot set trusted.root2 through the shadow"
[ "$(odt xattr get "$cg" trusted.root2)" = 2 ] || fail "trusted.root2 is not on the real tree"
stop_daemon
pass "uid $U lists '$sl'(no trusted.*, no oomdelayfs.*), gets ENODATA for them, EPERM setting them," \
	"the state unchanged; user.note round-trips; root lists '$rootl' and sets trusted.root2"
