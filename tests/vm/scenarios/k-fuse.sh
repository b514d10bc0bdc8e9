# k-fuse: FUSE mounting works in the VM: as root (direct mount) and as an ordinary user
# through the setuid fusermount3.
# timeout: 30
. /oomd/lib.sh
[ -c /dev/fuse ] || fail "no /dev/fuse (fuse.ko not loaded?)"
mod=built-in
grep -q '^fuse ' /proc/modules && mod=module
mp=/mnt/hello
mkdir -p "$mp"
t0=$(now_ms)
hellofs "$mp" -f &
pid=$!
wait_for 5000 _mounted "$mp" || fail "root: hellofs did not mount $mp"
tm=$(($(now_ms) - t0))
c=$(cat "$mp/hello") || fail "root: cannot read $mp/hello"
[ "$c" = "hello from fuse" ] || fail "root: read '$c'"
typ=$(awk -v m="$mp" '$2 == m {print $3}' /proc/mounts)
umount "$mp" || fail "root: umount failed"
wait_for 5000 dead "$pid" || fail "root: hellofs did not exit after umount"
# as user 1000 through fusermount3
ump=/tmp/uhello
mkdir -p "$ump"
chown 1000:1000 "$ump"
t0=$(now_ms)
odt asuser 1000 1000 hellofs "$ump" -f &
upid=$!
wait_for 5000 _mounted "$ump" || fail "user: hellofs did not mount $ump via fusermount3"
tu=$(($(now_ms) - t0))
c=$(odt asuser 1000 1000 cat "$ump/hello") || fail "user: cannot read $ump/hello"
[ "$c" = "hello from fuse" ] || fail "user: read '$c'"
odt asuser 1000 1000 fusermount3 -u "$ump" || fail "user: fusermount3 -u failed"
wait_for 5000 dead "$upid" || fail "user: hellofs did not exit after unmount"
pass "FUSE $mod; root mount ($typ) in ${tm} ms, user mount via setuid fusermount3 in ${tu} ms; reads ok; unmounted"
