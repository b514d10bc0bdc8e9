# k-xattr: extended attributes on a cgroup directory. user.* can be set and read, and (the
# reason oomdelayfs keeps its state in trusted.*) by the owner of a delegated directory too;
# trusted.* can be set and read by root (CAP_SYS_ADMIN) and by nobody else, owner or not.
# timeout: 30
. /oomd/lib.sh
cg=$(mkcg x)
odt xattr set "$cg" user.oomd.delay 1234 || fail "setxattr user.oomd.delay on $cg failed"
v=$(odt xattr get "$cg" user.oomd.delay) || fail "getxattr failed"
[ "$v" = 1234 ] || fail "read back '$v', wrote 1234"
odt xattr set "$cg" user.oomd.delay 0 || fail "overwrite failed"
[ "$(odt xattr get "$cg" user.oomd.delay)" = 0 ] || fail "overwrite not read back"
odt xattr list "$cg" | grep -qx user.oomd.delay || fail "listxattr does not show user.oomd.delay"
# trusted.*: root sets, reads, lists and removes it
odt xattr set "$cg" trusted.oomd.t 42 || fail "root cannot set trusted.* on a cgroup directory"
[ "$(odt xattr get "$cg" trusted.oomd.t)" = 42 ] || fail "trusted.* not read back"
odt xattr list "$cg" | grep -qx trusted.oomd.t || fail "listxattr (root) does not show trusted.oomd.t"
# a delegated directory (chowned to uid 1000): its owner sets user.*, never trusted.*
d=$(mkcg deleg)
chown 1000:1000 "$d" "$d/cgroup.procs" "$d/cgroup.threads" "$d/cgroup.subtree_control"
odt asuser 1000 1000 odt xattr set "$d" user.oomd.owner 1 2>/tmp/kx.err ||
	fail "the directory's owner cannot set user.* ($(cat /tmp/kx.err)): the premise changed"
odt asuser 1000 1000 odt xattr set "$d" trusted.oomd.t 1 2>/tmp/kx.err &&
	fail "uid 1000 set trusted.* on its own directory"
grep -q "Operation not permitted" /tmp/kx.err || fail "uid 1000's trusted.* write: $(cat /tmp/kx.err), not EPERM"
odt xattr set "$d" trusted.oomd.t 7 || fail "root cannot set trusted.* on a delegated directory"
odt asuser 1000 1000 odt xattr get "$d" trusted.oomd.t >/dev/null 2>&1 && towner=readable || towner=hidden
odt asuser 1000 1000 odt xattr list "$d" 2>/dev/null | grep -q '^trusted' && tlist=listed || tlist=unlisted
# informative: a value of 4 KiB, a file (not directory)
big=$(head -c 4096 /dev/zero | tr '\0' x)
odt xattr set "$cg" user.oomd.big "$big" 2>/dev/null && b=ok || b=refused
odt xattr set "$cg/memory.max" user.oomd.f 1 2>/dev/null && fl=ok || fl=refused
# does a new child cgroup inherit it? (it should not: the daemon must propagate itself)
mkdir "$cg/child"
odt xattr get "$cg/child" user.oomd.delay >/dev/null 2>&1 && inh=yes || inh=no
rmdir "$cg/child"
rmdir "$d" "$cg" 2>/dev/null
pass "user.* set/get/overwrite/list on a cgroup dir ok; trusted.* set/get/list by root ok;" \
	"delegated owner (uid 1000): user.* ok, trusted.* EPERM, root's trusted.* to it $towner and $tlist;" \
	"4KiB value $b; on a cgroup file $fl; inherited by a new child: $inh"
