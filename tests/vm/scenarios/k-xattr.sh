# k-xattr: user.* extended attributes can be set and read on a cgroup directory.
# timeout: 30
. /oomd/lib.sh
cg=$(mkcg x)
odt xattr set "$cg" user.oomd.delay 1234 || fail "setxattr user.oomd.delay on $cg failed"
v=$(odt xattr get "$cg" user.oomd.delay) || fail "getxattr failed"
[ "$v" = 1234 ] || fail "read back '$v', wrote 1234"
odt xattr set "$cg" user.oomd.delay 0 || fail "overwrite failed"
[ "$(odt xattr get "$cg" user.oomd.delay)" = 0 ] || fail "overwrite not read back"
odt xattr list "$cg" | grep -qx user.oomd.delay || fail "listxattr does not show user.oomd.delay"
# informative: a value of 4 KiB, a file (not directory), trusted.*
big=$(head -c 4096 /dev/zero | tr '\0' x)
odt xattr set "$cg" user.oomd.big "$big" 2>/dev/null && b=ok || b=refused
odt xattr set "$cg/memory.max" user.oomd.f 1 2>/dev/null && fl=ok || fl=refused
odt xattr set "$cg" trusted.oomd 1 2>/dev/null && trs=ok || trs=refused
# does a new child cgroup inherit it? (it should not: the daemon must propagate itself)
mkdir "$cg/child"
odt xattr get "$cg/child" user.oomd.delay >/dev/null 2>&1 && inh=yes || inh=no
rmdir "$cg/child"
pass "user.* set/get/overwrite/list on a cgroup dir ok; 4KiB value $b; on a cgroup file $fl;" \
	"trusted.* $trs; inherited by a new child: $inh"
