# bench-walk (issue 23; a benchmark, not a test: runs only when named): walking a directory of N
# cgroups as a monitoring agent does, natively, through the FUSE floor (floorfs -n N -s: one
# thread, READDIRPLUS, names and attributes kept 1 s) and through the shadow tree.
# only when named
# For each N in OOMD_WALK_SIZES (default "2000"): N sibling cgroups made in the real tree, then,
# each way taking turns, R = 3 runs each after a pause longer than every kernel cache's time-out
# (1.2 s: a monitor reads every 10-15 s), medians in ms of
#   ls    `ls -l DIR` (readdir plus a stat of each entry)
#   cat   `cat DIR/*/memory.current`
#   stat  `cat DIR/*/memory.stat`
#   write 100 x `echo max > DIR/c0/memory.max` (shell redirection: open(O_TRUNC) + write + close),
#         ms per 100 writes (the floor answers a write with its length and keeps nothing)
# (above OOMD_WALK_READ_MAX cgroups, default 2000, only ls and write: the all-files reads take
# minutes each under TCG at 10,000; cat and stat print "-")
# and the FUSE requests the shadow served for each (the daemon's own counters,
# `oomdelayfs status --metrics`): per entry of one `ls -l`, per file of the all-files read, and
# for one cold `cat` (names expired), one warm `cat`, one read on an open descriptor, and one
# limit write. FLUSH never reaches a counter: the daemon has no flush handler, the kernel
# gets ENOSYS once and stops sending it (fc->no_flush).
# BENCH lines: BENCH <kernel> walk N=<n> way=<native|floor|shadow> ls_ms= cat_ms= stat_ms= write_ms=
#              BENCH <kernel> walkops N=<n> what=<...> <op>=<count> ...
# timeout: 2400
. /oomd/lib.sh
command -v floorfs >/dev/null || skip "tests/vm/progs/floorfs is not built"
SIZES=${OOMD_WALK_SIZES:-2000}
R=3

# ops FILE: the shadow's request counters ("op n" lines)
ops() {
	oomdelayfs status --metrics |
		sed -n 's/^oomdelayfs_fuse_requests_total{op="\([a-z_]*\)"} \([0-9]*\)$/\1 \2/p' >"$1"
}
# opsdiff A B [DIV]: "op=count" for each op that moved from A to B (divided by DIV, 2 decimals)
opsdiff() {
	awk -v d="${3:-1}" 'NR == FNR { a[$1] = $2; next } $2 != a[$1] {
		v = ($2 - a[$1]) / d; printf "%s=%s ", $1, (v == int(v) ? v : sprintf("%.2f", v)) }' "$1" "$2"
}
# ms CMD...: the command's wall time in ms (output discarded)
ms() {
	_a=$(now_ms)
	"$@" >/dev/null 2>&1
	echo $(($(now_ms) - _a))
}
median3() { printf '%s\n' "$@" | sort -n | sed -n 2p; }
lsl() { ls -l "$1"; }
catall() { cat "$1"/*/"$2"; }
writes() {
	_i=0
	while [ $_i -lt 100 ]; do echo max >"$1/c0/memory.max" || return 1; _i=$((_i + 1)); done
}

start_daemon /shadow
summary=''
for N in $SIZES; do
	parent=$(mkcg "walk$N")
	setknob "$parent" cgroup.subtree_control +memory
	t0=$(now_ms)
	i=0
	while [ $i -lt "$N" ]; do mkdir "$parent/c$i" || fail "mkdir c$i"; i=$((i + 1)); done
	log "made $N cgroups in $(($(now_ms) - t0)) ms"
	mkdir -p /floor
	floorfs -n "$N" -s /floor &
	FLOOR_PID=$!
	wait_for 10000 _mounted /floor || fail "floorfs did not mount /floor"
	sp=/shadow${parent#$CGROOT}
	fp=/floor${parent#$CGROOT}
	[ "$(ls "$sp" | grep -c '^c[0-9]')" = "$N" ] || fail "the shadow lists $(ls "$sp" | grep -c '^c[0-9]') of $N cgroups"
	for f in "$parent/c0/memory.current" "$sp/c0/memory.current" "$fp/c0/memory.current"; do
		[ -r "$f" ] || fail "no $f"
	done
	for way in native floor shadow; do
		eval "ls_$way=''; cat_$way=''; stat_$way=''; write_$way=''"
	done
	r=0
	while [ $r -lt $R ]; do
		for way in native floor shadow; do
			case $way in native) d=$parent ;; floor) d=$fp ;; shadow) d=$sp ;; esac
			odt sleep 1200
			a=$(ms lsl "$d")
			b=- c=-
			if [ "$N" -le "${OOMD_WALK_READ_MAX:-2000}" ]; then
				odt sleep 1200
				b=$(ms catall "$d" memory.current)
				odt sleep 1200
				c=$(ms catall "$d" memory.stat)
			fi
			w=$(ms writes "$d")
			eval "ls_$way=\"\$ls_$way $a\"; cat_$way=\"\$cat_$way $b\"; stat_$way=\"\$stat_$way $c\"; write_$way=\"\$write_$way $w\""
		done
		r=$((r + 1))
		log "run $r of $R done"
	done
	for way in native floor shadow; do
		eval "l=\$ls_$way c=\$cat_$way s=\$stat_$way w=\$write_$way"
		# shellcheck disable=SC2086
		line="ls_ms=$(median3 $l) cat_ms=$(median3 $c) stat_ms=$(median3 $s) write_ms=$(median3 $w)"
		echo "BENCH $OOMD_KERNEL walk N=$N way=$way $line (runs: ls$l; cat$c; stat$s; write$w)"
		summary="$summary N=$N $way: $line;"
	done
	# FUSE requests per operation through the shadow
	odt sleep 1200
	ops /tmp/o0; lsl "$sp" >/dev/null; ops /tmp/o1
	echo "BENCH $OOMD_KERNEL walkops N=$N what=ls-l-per-entry $(opsdiff /tmp/o0 /tmp/o1 "$N")"
	if [ "$N" -le "${OOMD_WALK_READ_MAX:-2000}" ]; then
		odt sleep 1200
		ops /tmp/o0; catall "$sp" memory.current >/dev/null; ops /tmp/o1
		echo "BENCH $OOMD_KERNEL walkops N=$N what=cat-all-per-file $(opsdiff /tmp/o0 /tmp/o1 "$N")"
	fi
	odt sleep 1200
	ops /tmp/o0; cat "$sp/c1/memory.current" >/dev/null; ops /tmp/o1
	echo "BENCH $OOMD_KERNEL walkops N=$N what=cat-cold $(opsdiff /tmp/o0 /tmp/o1)"
	ops /tmp/o0; cat "$sp/c1/memory.current" >/dev/null; ops /tmp/o1
	echo "BENCH $OOMD_KERNEL walkops N=$N what=cat-warm $(opsdiff /tmp/o0 /tmp/o1)"
	exec 3<"$sp/c1/memory.current"
	ops /tmp/o0; dd bs=4096 count=1 <&3 >/dev/null 2>&1; ops /tmp/o1
	exec 3<&-
	echo "BENCH $OOMD_KERNEL walkops N=$N what=read-open-fd $(opsdiff /tmp/o0 /tmp/o1)"
	ops /tmp/o0; echo max >"$sp/c1/memory.max"; ops /tmp/o1
	echo "BENCH $OOMD_KERNEL walkops N=$N what=limit-write $(opsdiff /tmp/o0 /tmp/o1)"
	kill -TERM "$FLOOR_PID"
	wait_for 5000 dead "$FLOOR_PID" || fail "floorfs did not stop on SIGTERM"
	i=0
	while [ $i -lt "$N" ]; do rmdir "$parent/c$i"; i=$((i + 1)); done
	rmdir "$parent"
done
stop_daemon
pass "$summary"
