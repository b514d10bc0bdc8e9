# bench-walk (issue 23; a benchmark, not a test: runs only when named): walking a directory of N
# cgroups as a monitoring agent does, natively, through three FUSE floors and through the shadow.
# only when named
# The floors (tests/vm/progs/floorfs, one thread, READDIRPLUS, names and attributes kept 1 s):
#   floor-mem    answers from memory (floorfs -n N -s): the protocol's cost alone
#   floor        a pass-through of the real cgroups (-r DIR): each c<i> an fstatat, each file
#                opened, read or written and closed for real, extended attributes read from
#                the real object (security.capability before each write), what the shadow
#                does for them
#   floor-exact  the pass-through with a file's name never kept (-F 0): what a server of files
#                whose length changes needs for sendfile readers (the shadow's LOOKUP per
#                walk, docs/DESIGN.md "a file's attributes kept 1 s too, its name never")
# For each N in OOMD_WALK_SIZES (default "2000"): N sibling cgroups made in the real tree, then,
# each way taking turns (OOMD_WALK_WAYS: which; their order reversed every other round), R runs each (OOMD_WALK_RUNS, default 5) after a pause longer than every
# kernel cache's time-out (1.2 s: a monitor reads every 10-15 s), medians in ms of
#   ls    `ls -l DIR` (readdir plus a stat of each entry)
#   cat   `cat DIR/*/memory.current`
#   stat  `cat DIR/*/memory.stat`
#   write 100 limit writes `echo V > DIR/c0/memory.max` (shell redirection: open(O_TRUNC) +
#         write + close), V taking turns between 1 GiB and max so that each is a change the
#         shadow's rules act on (a rewrite of the same value changes nothing); ms per 100
#         writes (floor-mem answers a write with its length and keeps nothing)
# (above OOMD_WALK_READ_MAX cgroups, default 2000, only ls and write: the all-files reads take
# minutes each under TCG at 10,000; cat and stat print "-")
# and, since a TCG VM's speed drifts by a third between minutes on this 2-core host, the median of
# the per-round ratios shadow / floor-exact (each round runs the two one after the other, so a
# slow minute slows both: the paired figure the 1.2x goal is judged by; the ratio of the
# medians beside it in bench.sh)
# and the FUSE requests the shadow served for each (the daemon's own counters,
# `oomdelayfs status --metrics`): per entry of one `ls -l`, per file of the all-files read, and
# for one cold `cat` (names expired), one warm `cat`, one read on an open descriptor, and one
# limit write. FLUSH never reaches a counter: the daemon has no flush handler, the kernel
# gets ENOSYS once and stops sending it (fc->no_flush).
# BENCH lines: BENCH <kernel> walk N=<n> way=<native|floor-mem|floor|floor-exact|shadow> ls_ms= cat_ms= stat_ms= write_ms=
#              BENCH <kernel> walkpair N=<n> vs=floor-exact ls= cat= stat= write= (median of the rounds' ratios)
#              BENCH <kernel> walkops N=<n> what=<...> <op>=<count> ...
# timeout: 2400
. /oomd/lib.sh
command -v floorfs >/dev/null || skip "tests/vm/progs/floorfs is not built"
SIZES=${OOMD_WALK_SIZES:-2000}
R=${OOMD_WALK_RUNS:-5}

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
# ms CMD...: the command's wall time in ms (output discarded); "failed" if it failed (a
# refused write is quick: it must not pass for a figure)
ms() {
	_a=$(now_ms)
	if "$@" >/dev/null 2>&1; then echo $(($(now_ms) - _a)); else echo failed; fi
}
# median V...: the middle value ("-" where there are none: a size above OOMD_WALK_READ_MAX)
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "-" }'; }
# pairmed "A..." "B...": the median of A[i] / B[i], 2 decimals ("-" if a value is not a number)
pairmed() {
	awk -v a="$1" -v b="$2" 'BEGIN { n = split(a, x, " "); split(b, y, " ")
		for (i = 1; i <= n; i++) { if (x[i] !~ /^[0-9]+$/ || y[i] + 0 <= 0) { print "-"; exit }
			r[i] = x[i] / y[i] }
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (r[j] < r[i]) { t = r[i]; r[i] = r[j]; r[j] = t }
		printf "%.2fx\n", r[int((n + 1) / 2)] }'
}
lsl() { ls -l "$1"; }
catall() { cat "$1"/*/"$2"; }
writes() {
	_i=0
	while [ $_i -lt 50 ]; do
		echo 1073741824 >"$1/c0/memory.max" || return 1
		echo max >"$1/c0/memory.max" || return 1
		_i=$((_i + 1))
	done
}
# OOMD_WALK_WAYS (comma-separated, default all five): fewer ways, more rounds in the same time;
# the paired figure needs floor-exact and shadow
WAYS=$(echo "${OOMD_WALK_WAYS:-native,floor-mem,floor,floor-exact,shadow}" | tr , ' ')
var() { echo "$1" | tr - _; } # a way's name as a shell variable's

start_daemon /shadow
summary=''
for N in $SIZES; do
	parent=$(mkcg "walk$N")
	setknob "$parent" cgroup.subtree_control +memory
	t0=$(now_ms)
	i=0
	while [ $i -lt "$N" ]; do mkdir "$parent/c$i" || fail "mkdir c$i"; i=$((i + 1)); done
	log "made $N cgroups in $(($(now_ms) - t0)) ms"
	FLOOR_PIDS=''
	for m in floorm:"" floor:"-r $parent" floorx:"-r $parent -F 0"; do
		mkdir -p "/${m%%:*}"
		# shellcheck disable=SC2086
		floorfs -n "$N" -s ${m#*:} "/${m%%:*}" &
		FLOOR_PIDS="$FLOOR_PIDS $!"
		wait_for 10000 _mounted "/${m%%:*}" || fail "floorfs did not mount /${m%%:*}"
	done
	sp=/shadow${parent#$CGROOT}
	[ "$(ls "$sp" | grep -c '^c[0-9]')" = "$N" ] || fail "the shadow lists $(ls "$sp" | grep -c '^c[0-9]') of $N cgroups"
	for f in "$parent/c0/memory.current" "$sp/c0/memory.current" "/floorm${parent#$CGROOT}/c0/memory.current" \
		"/floor${parent#$CGROOT}/c0/memory.current" "/floorx${parent#$CGROOT}/c0/memory.current"; do
		[ -r "$f" ] || fail "no $f"
	done
	# the pass-through floors read the real file: the same content as natively
	[ "$(cat "/floor${parent#$CGROOT}/c0/memory.stat" | wc -l)" = "$(wc -l <"$parent/c0/memory.stat")" ] ||
		fail "floorfs -r does not pass memory.stat through"
	for way in $WAYS; do
		v=$(var "$way")
		eval "ls_$v=''; cat_$v=''; stat_$v=''; write_$v=''"
	done
	r=0
	while [ $r -lt $R ]; do
		# the ways in turn, reversed every other round: a way that always ran right
		# after another (the shadow after floor-exact) would carry any effect of that
		# order into every paired ratio
		order=$WAYS
		[ $((r % 2)) = 1 ] && order=$(printf '%s\n' $WAYS | sed -n '1!G;h;$p' | tr '\n' ' ')
		for way in $order; do
			case $way in
			native) d=$parent ;;
			floor-mem) d=/floorm${parent#$CGROOT} ;;
			floor) d=/floor${parent#$CGROOT} ;;
			floor-exact) d=/floorx${parent#$CGROOT} ;;
			shadow) d=$sp ;;
			esac
			v=$(var "$way")
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
			case "$a $b $c $w" in *failed*) fail "$way: ls $a, cat $b, stat $c, write $w ms in $d" ;; esac
			eval "ls_$v=\"\$ls_$v $a\"; cat_$v=\"\$cat_$v $b\"; stat_$v=\"\$stat_$v $c\"; write_$v=\"\$write_$v $w\""
		done
		r=$((r + 1))
		log "run $r of $R done"
	done
	for way in $WAYS; do
		v=$(var "$way")
		eval "l=\$ls_$v c=\$cat_$v s=\$stat_$v w=\$write_$v"
		# shellcheck disable=SC2086
		line="ls_ms=$(median $l) cat_ms=$(median $c) stat_ms=$(median $s) write_ms=$(median $w)"
		echo "BENCH $OOMD_KERNEL walk N=$N way=$way $line (runs: ls$l; cat$c; stat$s; write$w)"
		summary="$summary N=$N $way: $line;"
	done
	# shellcheck disable=SC2154 # set by the eval above
	echo "BENCH $OOMD_KERNEL walkpair N=$N vs=floor-exact ls=$(pairmed "$ls_shadow" "$ls_floor_exact")" \
		"cat=$(pairmed "$cat_shadow" "$cat_floor_exact") stat=$(pairmed "$stat_shadow" "$stat_floor_exact")" \
		"write=$(pairmed "$write_shadow" "$write_floor_exact")"
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
	echo max >"$sp/c1/memory.max"
	ops /tmp/o0; echo 1073741824 >"$sp/c1/memory.max"; ops /tmp/o1
	echo "BENCH $OOMD_KERNEL walkops N=$N what=limit-write $(opsdiff /tmp/o0 /tmp/o1)"
	for f in $FLOOR_PIDS; do
		kill -TERM "$f"
		wait_for 5000 dead "$f" || fail "floorfs did not stop on SIGTERM"
	done
	i=0
	while [ $i -lt "$N" ]; do rmdir "$parent/c$i"; i=$((i + 1)); done
	rmdir "$parent"
done
stop_daemon
pass "$summary"
