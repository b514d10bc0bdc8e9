# d-v1perm (issue 22, deliverable 4): cgroup.event_control registrations are checked as 6.1's
# memcg_write_event_control checks them: file_permission(cfile, MAY_READ) of the control file's
# descriptor against the writer, EACCES when it may not read it. Uid 1000, on native cgroup v1
# (6.1 only) and through the shadow tree (--layout v1 and the default layout):
#   pl-open  opens P/c/memory.pressure_level itself (mode 0, as v1's cftype has no read handler)
#   pl-fd    is handed a descriptor of it that root opened, and writes "<efd> <fd> low"
#   us-open, us-fd  the same with P/c's memory.usage_in_bytes made 0400 by the admin (native: a
#            chmod of it; shadow: of the real memory.current it shows, as a chmod of a file only
#            the shadow has changes nothing: docs/V1-LAYOUT.md) and a 16M threshold
# and beside them the legitimate registrations, which must work and hear the workload:
#   root-low root's "low" on P/c's memory.pressure_level; root-thr root's 8M threshold on P/c
#   u-thr2   uid 1000's 16M threshold on P/c2's (readable) usage file, opened itself
#   u-fd2    the same through a descriptor root opened
# Workload: phase A a 24 MiB hog held 1 s in c and one in c2 (64 MiB limits: thresholds crossed
# up and down, no reclaim); phase B c's limit at 16 MiB and a 32 MiB hog in c (no swap: killed).
# Native and shadow transcripts are compared line by line; on 6.12 and 7 the shadow is compared
# with 6.1's native transcript embedded below.
# timeout: 300
# runs first: a native v1 mount needs the memory controller free of dying memcgs
. /oomd/lib.sh
N=test-$OOMD_SCENARIO
U=1000
case $OOMD_KERNEL in
6.1 | 6.1.*) native=1 ;;
*) native=0 ;;
esac
[ $native = 1 ] && v1native_enter "$@"

# side ROOT TAG LIMITFILE USAGEFILE_TO_CHMOD(relative to c's real directory)
side() {
	R=$1 T=$2 LIM=$3 UF=$4
	P=$R/$N C=$R/$N/c C2=$R/$N/c2
	mkdir "$P" || fail "$T: mkdir $P"
	[ -e "$P/cgroup.subtree_control" ] && echo +memory >"$P/cgroup.subtree_control" 2>/dev/null
	mkdir "$C" "$C2" || fail "$T: mkdir $C $C2"
	echo 64M >"$C/$LIM" && echo 64M >"$C2/$LIM" || fail "$T: cannot set $LIM"
	chmod 0400 "$UF" || fail "$T: chmod 0400 $UF"
	sleep 1.1 # attributes the shadow's kernel side may have kept (1 s)
	echo "# $T modes: pressure_level $(lsattrs "$C/memory.pressure_level"), usage_in_bytes" \
		"$(lsattrs "$C/memory.usage_in_bytes"), c2 usage_in_bytes $(lsattrs "$C2/memory.usage_in_bytes")," \
		"event_control $(lsattrs "$C/cgroup.event_control")"
	rm -f /tmp/vp.$T.*
	names="" pids=""
	# as NAME UID CONTROL ARGS [cgevl options]: one listener; root's when UID is 0
	as() {
		_n=$1 _u=$2
		shift 2
		if [ "$_u" = 0 ]; then
			cgevl listen "$@" --timeout 120000 >/tmp/vp.$T.$_n 2>&1 &
		else
			odt asuser "$_u" "$_u" cgevl listen "$@" --timeout 120000 >/tmp/vp.$T.$_n 2>&1 &
		fi
		names="$names $_n" pids="$pids $!"
	}
	as pl-open $U "$C/memory.pressure_level" low
	as pl-fd $U "$C/memory.pressure_level" low --cfd 7 7<"$C/memory.pressure_level"
	as us-open $U "$C/memory.usage_in_bytes" 16M
	as us-fd $U "$C/memory.usage_in_bytes" 16M --cfd 7 7<"$C/memory.usage_in_bytes"
	as root-low 0 "$C/memory.pressure_level" low
	as root-thr 0 "$C/memory.usage_in_bytes" 8M
	as u-thr2 $U "$C2/memory.usage_in_bytes" 16M
	as u-fd2 $U "$C2/memory.usage_in_bytes" 16M --cfd 7 7<"$C2/memory.usage_in_bytes"
	for l in $names; do
		wait_for 5000 grep -qs -e '^registered' -e '^refused' /tmp/vp.$T.$l || echo "# $T $l: no answer in 5 s"
	done
	a0=$(now_ms)
	cgevl hog "$C" 24 1000 >/tmp/vp.$T.hogA &
	hp=$!
	cgevl hog "$C2" 24 1000 >/tmp/vp.$T.hogA2
	wait $hp
	sleep 1
	b0=$(now_ms)
	echo 16M >"$C/$LIM" || fail "$T: cannot lower $C/$LIM"
	cgevl hog "$C" 32 1000 >/tmp/vp.$T.hogB
	sleep 2
	r0=$(now_ms)
	rmdir "$C" "$C2" || echo "$T: rmdir $C $C2 failed"
	sleep 1
	rmdir "$P" || echo "$T: rmdir $P failed"
	for p in $pids; do
		wait "$p"
	done
	echo "hog A: $(cut -d' ' -f3 /tmp/vp.$T.hogA) $(cut -d' ' -f3 /tmp/vp.$T.hogA2)"
	echo "hog B: $(cut -d' ' -f3 /tmp/vp.$T.hogB | cut -d= -f1)"
	for l in $names; do
		f=/tmp/vp.$T.$l
		echo "# $T $l: $(tr '\n' ' ' <"$f")"
		if grep -q '^refused' "$f"; then
			echo "$l: $(grep '^refused' "$f")"
			continue
		fi
		awk -v l=$l -v a=$a0 -v b=$b0 -v r=$r0 '
			$1 == "event" { split($3, c, "="); if ($2 < b) na += c[2]; else if ($2 < r) nb += c[2]; else nr += c[2] }
			$1 == "removed" { gone = 1 }
			END {
				if (l == "root-low") printf "%s: A %s B %s", l, na ? "heard" : "-", nb ? "heard" : "-"
				else printf "%s: A %d B %d", l, na, nb
				printf " rmdir %d%s\n", nr, gone ? "" : " (not seen removed)"
			}' "$f"
	done
}

if [ $native = 1 ]; then
	v1native_mount 290
	side /v1mem native memory.limit_in_bytes /v1mem/$N/c/memory.usage_in_bytes >/tmp/vp.out.native 2>&1
	echo "--- native:"; cat /tmp/vp.out.native
	v1native_umount
else
	# 6.1's native transcript (d-v1perm on 6.1, 2026-12-05)
	cat >/tmp/vp.out.native <<'GOLDEN'
hog A: exit=0 exit=0
hog B: killed
pl-open: refused EACCES (open)
pl-fd: refused EACCES
us-open: refused EACCES (open)
us-fd: refused EACCES
root-low: A - B heard rmdir 1
root-thr: A 2 B 2 rmdir 1
u-thr2: A 2 B 0 rmdir 1
u-fd2: A 2 B 0 rmdir 1
GOLDEN
fi
start_daemon /shadow --layout v1
side /shadow shadow memory.limit_in_bytes $CGROOT/$N/c/memory.current >/tmp/vp.out.shadow 2>&1
stop_daemon
start_daemon /shadow
side /shadow v2 memory.max $CGROOT/$N/c/memory.current >/tmp/vp.out.v2 2>&1
stop_daemon
[ $native = 1 ] && kill "$V1N_WD" 2>/dev/null
echo "--- shadow (--layout v1):"; cat /tmp/vp.out.shadow
echo "--- shadow (default layout):"; cat /tmp/vp.out.v2
grep -v '^#' /tmp/vp.out.native >/tmp/vp.n
bad=""
for t in shadow v2; do
	grep -v '^#' /tmp/vp.out.$t >/tmp/vp.s
	# the attack fails and the legitimate registrations beside it work, whatever native said
	for l in pl-open pl-fd us-open us-fd; do
		grep -q "^$l: refused EACCES" /tmp/vp.s || bad="$bad $t/$l($(grep "^$l" /tmp/vp.s))"
	done
	grep -q '^root-low: A - B heard rmdir 1$' /tmp/vp.s || bad="$bad $t/root-low($(grep '^root-low' /tmp/vp.s))"
	for l in root-thr u-thr2 u-fd2; do
		grep -q "^$l: A 2 " /tmp/vp.s || bad="$bad $t/$l($(grep "^$l" /tmp/vp.s))"
	done
	[ -s /tmp/vp.n ] || continue
	echo "--- differences (- native v1, + $t):"
	diff -U0 /tmp/vp.n /tmp/vp.s | grep -v -e '^---' -e '^+++' -e '^@@' | tee /tmp/vp.d.$t
	[ -s /tmp/vp.d.$t ] && bad="$bad $t differs from native v1: $(tr '\n' ';' </tmp/vp.d.$t)"
done
[ -n "$bad" ] && fail "$bad"
[ -s /tmp/vp.n ] || skip "attacks refused (EACCES) and the registrations beside them heard the workload in both layouts, but no native transcript to compare with (run on 6.1 first and embed it)"
pass "uid $U refused EACCES for memory.pressure_level and a 0400 usage file (opened itself or" \
	"handed root's descriptor); root's low and threshold and uid $U's thresholds on c2 heard the" \
	"workload; both layouts as native v1 ($(wc -l </tmp/vp.n) lines)"
