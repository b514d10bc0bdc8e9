# bench-manage (issue 23, deliverable 4; a benchmark, not a test: runs only when named): N fully
# managed cgroups, as an operator makes them: N siblings made in the real tree, the daemon
# started, then through the shadow a limit written in each (`echo 16M > cN/memory.max`), the
# delay written once on their parent (inherited), and one OOM listener (v1listener: eventfd +
# cgroup.event_control) on every 10th. VM memory: OOMD_VM_MEM=3072 for N = 10,000.
# only when named
# Figures per N (OOMD_MANAGE_SIZES, default "2000 10000"): the limit writes (ms in all), the
# daemon's RSS (and where it is: heap, other anonymous, files) and descriptors 7 s after the
# last listener registered (past the sweeper's first turn), its descriptors by kind (cgroup
# directories kept O_PATH, the controller's O_RDONLY ones, cgroup files, eventfds, other), the
# kernel memory the daemon pins (inotify watches counted in its inotify descriptor's fdinfo;
# the slab caches of kernfs nodes and attributes, dentries, inodes, FUSE inodes, inotify
# marks and open files, and the Slab total, before the daemon started and now, both after
# `echo 2 > drop_caches` so that only what is referenced counts: bench.sh boots with
# slab_nomerge so each cache is its own), then SIGKILL and a restart: ms until the last
# child's delay reads back through the shadow (the mount serves again), the daemon's own
# "answering" figure (its start to its FUSE loop), until "serving" (every cgroup adopted),
# and RSS after it.
# BENCH lines: BENCH <kernel> manage N=<n> <key>=<value> ...
# timeout: 3000
. /oomd/lib.sh
command -v v1listener >/dev/null || skip "tests/vm/progs/v1listener is not built"
SIZES=${OOMD_MANAGE_SIZES:-2000 10000}
L=$((16 * MiB))
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
fds() { ls "/proc/$1/fd" | wc -l; }
# fd_kinds PID: "dirs=.. ctldirs=.. files=.. eventfds=.. others=.." of PID's descriptors:
# dirs are O_PATH (the shadow's nodes and their dups), ctldirs not (the controller's
# O_RDONLY ones), by fdinfo's octal flags (O_PATH 010000000); a cgroup path whose last
# component has a dot is a file (every cgroup file's name has one, these cgroups' none).
# Two processes in all, not one per descriptor: a fork per descriptor took minutes at
# 40,000 under TCG.
fd_kinds() {
	{
		ls -l "/proc/$1/fd" | awk '$(NF - 1) == "->" { n = $(NF - 2); print "L", n, $NF }'
		grep '^flags:' /proc/"$1"/fdinfo/* 2>/dev/null | sed 's|^.*/\([0-9]*\):flags:[[:space:]]*| F \1 |'
	} | awk '$1 == "F" { f[$2] = $3; next } $1 == "L" { t[$2] = $3 }
		END { for (n in t) { p = t[n]
			if (p ~ /^\/sys\/fs\/cgroup/) {
				m = p; sub(/.*\//, "", m)
				if (m ~ /\./) k = "file"
				else { o = f[n]; x = 0; for (i = 1; i <= length(o); i++) x = x * 8 + substr(o, i, 1)
					k = int(x / 2097152) % 2 ? "dir" : "ctldir" }
			} else if (p ~ /eventfd/) k = "eventfd"; else k = "other"
			c[k]++ }
		for (k in c) printf "%ss=%d ", k, c[k] }'
}
# rss_where PID: resident kB of the heap, the other anonymous mappings, and files (libraries)
rss_where() {
	awk '/^[0-9a-f]+-[0-9a-f]+ / { k = $6 == "[heap]" ? "heap" : ($6 == "" || $6 ~ /^\[/) ? "anon" : "files" }
		/^Rss:/ { r[k] += $2 } END { printf "heap_kb=%d anon_kb=%d files_kb=%d", r["heap"], r["anon"], r["files"] }' \
		"/proc/$1/smaps"
}
# watches PID: inotify watches held by PID (one "inotify wd:" line each in the fdinfo)
watches() {
	for f in /proc/"$1"/fd/*; do
		[ "$(readlink "$f" 2>/dev/null)" = "anon_inode:inotify" ] || continue
		grep -c '^inotify wd:' "/proc/$1/fdinfo/${f##*/}"
	done | awk '{ n += $1 } END { print n + 0 }'
}
# slab: "cache=kB ..." (active objects x object size: freed objects in a slab page not
# counted) of the caches the daemon's holdings live in, and the Slab total (pages)
slab() {
	awk '$1 ~ /^(kernfs_node_cache|kernfs_iattrs_cache|dentry|inode_cache|fuse_inode|inotify_inode_mark|filp)$/ {
		printf "%s=%d ", $1, $2 * $4 / 1024 }' /proc/slabinfo
	awk '/^Slab:/ { printf "Slab=%d", $2 }' /proc/meminfo
}
slabdiff() { # A B: B - A for each key
	echo "$1" "|" "$2" | awk '{ for (i = 1; i <= NF; i++) { if ($i == "|") { b = 1; continue }
		split($i, kv, "="); if (b) d[kv[1]] += kv[2]; else d[kv[1]] -= kv[2]; if (!b) o[++n] = kv[1] } }
		END { for (i = 1; i <= n; i++) printf "%s%+dkB ", o[i], d[o[i]] }'
}

# 3 inotify watches per cgroup (its directory, memory.events, memory.max): the default
# fs.inotify.max_user_watches (1% of RAM, 23,155 of them counted in a 3 GiB VM on 6.1) ran out
# at 10,000, and each cgroup past it went without its memory.events watch; raised for the
# run (the operator's part: README), the default logged
w0=$(cat /proc/sys/fs/inotify/max_user_watches)
trap 'echo "$w0" >/proc/sys/fs/inotify/max_user_watches' EXIT
summary=''
for N in $SIZES; do
	need=$((3 * N + 4096))
	[ "$w0" -ge "$need" ] || echo "$need" >/proc/sys/fs/inotify/max_user_watches
	log "N=$N fs.inotify.max_user_watches $w0 by default, $(cat /proc/sys/fs/inotify/max_user_watches) for the run"
	p=$(mkcg "m$N")
	setknob "$p" cgroup.subtree_control +memory
	sp=/shadow${p#$CGROOT}
	(cd "$p" && seq 1 "$N" | sed 's/^/c/' | xargs mkdir) || fail "mkdir of $N cgroups"
	sync
	echo 2 >/proc/sys/vm/drop_caches
	s0=$(slab)
	n0=$(grep -c 'serving ' /tmp/oomdelayfs.log 2>/dev/null)
	start_daemon /shadow
	wait_for 600000 _served "${n0:-0}" || fail "N=$N: not serving within 600 s"
	log "N=$N serving: RSS $(rss_kb "$DAEMON_PID") kB, $(rss_where "$DAEMON_PID")"
	t0=$(now_ms)
	for i in $(seq 1 "$N"); do
		echo "$L" >"$sp/c$i/memory.max" || fail "N=$N: limit of c$i through the shadow"
	done
	tlim=$(($(now_ms) - t0))
	echo 5000 >"$sp/memory.oom_delay_millisecs" || fail "N=$N: the delay on the parent"
	read -r h <"$p/c$N/memory.high"
	[ "$h" = "$L" ] || fail "N=$N: c$N real memory.high '$h' (want $L: managed)"
	log "N=$N limits written: RSS $(rss_kb "$DAEMON_PID") kB, $(rss_where "$DAEMON_PID"), $(fds "$DAEMON_PID") fds"
	rm -rf /tmp/lr && mkdir /tmp/lr
	LPIDS=''
	for i in $(seq 10 10 "$N"); do
		v1listener "$sp/c$i" --timeout 3600000 --ready "/tmp/lr/$i" >/dev/null 2>&1 &
		LPIDS="$LPIDS $!"
	done
	nl=$((N / 10))
	ready() { [ "$(ls /tmp/lr | wc -l)" -ge "$nl" ]; }
	wait_for 600000 ready || fail "N=$N: $(ls /tmp/lr | wc -l) of $nl listeners registered"
	odt sleep 7000
	rss=$(rss_kb "$DAEMON_PID")
	where=$(rss_where "$DAEMON_PID")
	nfd=$(fds "$DAEMON_PID")
	kinds=$(fd_kinds "$DAEMON_PID")
	nw=$(watches "$DAEMON_PID")
	log "N=$N resident kB by mapping: $(awk '/^[0-9a-f]+-[0-9a-f]+ / { m = $6 ? $6 : "[anon]" } /^Rss:/ { r[m] += $2 }
		END { for (k in r) print r[k], k }' "/proc/$DAEMON_PID/smaps" | sort -rn | head -n 16 | tr '\n' ' ')"
	log "N=$N threads: $(cat /proc/"$DAEMON_PID"/task/*/comm | sort | uniq -c | tr -s ' \n' ' ')"
	sync
	echo 2 >/proc/sys/vm/drop_caches
	odt sleep 2000
	s1=$(slab)
	nfd1=$(fds "$DAEMON_PID")
	log "N=$N slab before the daemon: $s0; now: $s1"
	log "N=$N fds after drop_caches: $nfd1 ($(fd_kinds "$DAEMON_PID"))"
	kill_daemon
	t0=$(now_ms)
	n0=$(grep -c 'serving ' /tmp/oomdelayfs.log)
	_launch_daemon
	# one process reading every 5 ms (bench-restart.sh says why not a shell loop)
	readlat until "$sp/c$N/memory.oom_delay_millisecs" 5000 --since "$t0" --every-ms 5 \
		--timeout 600000 >/tmp/until ||
		fail "N=$N: c$N delay not read as 5000 600 s after the restart: $(cat /tmp/until)"
	tserve=$(sed -n 's/^ms=\([0-9]*\) .*/\1/p' /tmp/until)
	log "N=$N restart: the client's reads (ms after the launch:outcome, each change): $(cat /tmp/until)"
	wait_for 600000 _served "$n0" || fail "N=$N: the restarted daemon did not serve within 600 s"
	tadopt=$(($(now_ms) - t0))
	# the daemon's own figure: from its start to its FUSE loop (the rest of restart_serve_ms
	# is the shell's launch, up to one 5 ms polling interval, and the cgroup's first use)
	tanswer=$(sed -n 's/.*answering on .* \([0-9]*\) ms after the start.*/\1/p' /tmp/oomdelayfs.log | tail -n 1)
	odt sleep 2000
	rss2=$(rss_kb "$DAEMON_PID")
	fd2=$(fds "$DAEMON_PID")
	echo "BENCH $OOMD_KERNEL manage N=$N limits_ms=$tlim listeners=$nl rss_kb=$rss $where fds=$nfd $kinds" \
		"watches=$nw fds_reclaimed=$nfd1 pinned: $(slabdiff "$s0" "$s1") restart_serve_ms=$tserve" \
		"restart_answering_ms=${tanswer:-?} restart_adopted_ms=$tadopt rss_after_kb=$rss2 fds_after=$fd2"
	summary="$summary N=$N: RSS $rss kB, $nfd fds ($kinds), $nw watches, restart $tserve ms (adopted $tadopt);"
	stop_daemon
	# shellcheck disable=SC2086
	kill $LPIDS 2>/dev/null
	for pid in $LPIDS; do wait "$pid" 2>/dev/null; done
	(cd "$p" && seq 1 "$N" | sed 's/^/c/' | xargs rmdir) || fail "rmdir of $N cgroups"
	rmdir "$p"
done
pass "$summary"
