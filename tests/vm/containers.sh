# containers.sh - the body of the c-* scenarios (c-runc, c-crun): sourced after lib.sh with
# RT set to the runtime (runc or crun, Debian's own). Containers use a busybox rootfs (the
# VM's own /bin and libraries, bind-mounted read-only), --no-pivot (there is no pivot_root
# from an initramfs), a cgroup namespace and a cgroup under $OOMD_CG. The containers:
#   A  asks for nothing: run twice, before the daemon starts (plain runtime) and through the
#      shim with the daemon up and the hook in its config; same /sys/fs/cgroup listing,
#      cgroup2 only, the same OOM kill, and its config.json left byte for byte by the shim
#   X  asks while no daemon runs: does not start, the hook says why; a bad annotation value:
#      refused by the shim
#   B  disableOOMKiller: true, through the shim (oomdelayfs-runtime): held at its limit, not
#      killed, and runs on when `$RT update --memory` raises the limit from the host;
#      inside: the synthetic files, its own pids in cgroup.procs, what the JVM-style and
#      systemd-style detection see (cgdetect); its cgroup mount is read-only (as Docker's)
#      and the shadow keeps it so (its own write of 0 fails)
#   C  the delay annotation with the hook in config.json as podman's and CRI-O's hooks.d put
#      it (createRuntime stage): held T ms, then killed; a v1 listener inside it is notified
#   D  the delay with org.oomdelayfs.mount=false: set, and /sys/fs/cgroup left as it was
#   E  the delay in a container without a cgroup namespace: both runtimes then mount the
#      whole tree (root /); the shadow of the whole tree covers it, and the JVM-style lookup
#      (mount point + /proc/self/cgroup path) finds L and the delay
: "${RT:?RT must be runc or crun}"
command -v "$RT" >/dev/null || skip "$RT is not in the image (apt-get install $RT on the build host)"
command -v oomdelayfs-runtime >/dev/null || skip "oci/ is not built"
L=$((32 * MiB))
IO=/tmp/io-$RT
CTRS=''

# bundle NAME MEMORY-EXTRA ANNOTATIONS HOOKS CMD [ro]: a bundle in /tmp/b-NAME for container
# NAME (cgroup $OOMD_CG/NAME, memory limit L), running CMD (busybox sh -c) with /io = $IO;
# its /sys/fs/cgroup read-write, or read-only as Docker and CRI mount it
bundle() {
	_b=/tmp/b-$1
	mkdir -p "$_b/rootfs" "$IO"
	for d in bin lib lib64 usr proc sys dev io; do mkdir -p "$_b/rootfs/$d"; done
	cat >"$_b/config.json" <<J
{"ociVersion":"1.0.2","hostname":"$1",
 "process":{"terminal":false,"user":{"uid":0,"gid":0},"cwd":"/","env":["PATH=/bin"],
  "args":["/bin/sh","-c","$5"]},
 "root":{"path":"rootfs","readonly":true},
 "mounts":[{"destination":"/proc","type":"proc","source":"proc"},
  {"destination":"/dev","type":"tmpfs","source":"tmpfs","options":["nosuid","mode=755"]},
  {"destination":"/sys","type":"sysfs","source":"sysfs","options":["nosuid","noexec","nodev","ro"]},
  {"destination":"/sys/fs/cgroup","type":"cgroup","source":"cgroup","options":["nosuid","noexec","nodev","relatime","${6:-rw}"]},
  {"destination":"/bin","type":"bind","source":"/bin","options":["rbind","ro"]},
  {"destination":"/lib","type":"bind","source":"/lib","options":["rbind","ro"]},
  {"destination":"/lib64","type":"bind","source":"/lib64","options":["rbind","ro"]},
  {"destination":"/usr","type":"bind","source":"/usr","options":["rbind","ro"]},
  {"destination":"/io","type":"bind","source":"$IO","options":["rbind","rw"]}],
 "annotations":{$3},
 "hooks":{$4},
 "linux":{"cgroupsPath":"${OOMD_CG#$CGROOT}/$1",
  "resources":{"memory":{"limit":$L$2}},
  "namespaces":[{"type":"pid"},{"type":"ipc"},{"type":"uts"},{"type":"mount"},{"type":"cgroup"}]}}
J
	echo "$_b"
}
# start NAME RUNTIME: run container NAME in the background (foreground runtime in a
# background shell, so that `wait` gets the container's exit status); sets RUN_PID
start() {
	CTRS="$CTRS $1"
	(cd "/tmp/b-$1" && exec "$2" run --no-pivot "$1") >"$IO/$1.out" 2>&1 &
	RUN_PID=$!
}
# finish PID: sets RC to the exit status of a background run (not in a $(...) subshell,
# which cannot wait for its parent's children)
finish() { wait "$1"; RC=$?; }
cleanup() { for c in $CTRS; do $RT delete -f "$c" >/dev/null 2>&1; done; }
trap cleanup EXIT
INSIDE='cgdetect >/io/$(hostname).detect; ls /sys/fs/cgroup >/io/$(hostname).ls; cat /sys/fs/cgroup/cgroup.procs >/io/$(hostname).procs'
uoom() { grep -q '^under_oom 1' "$1/memory.oom_control" 2>/dev/null; }
mkcg . >/dev/null # $OOMD_CG with +memory, the containers' parent

# the shim finds the real runtime and the hook in its key file
cat >/tmp/oomdelayfs-runtime.conf <<K
[runtime]
path=/bin/$RT
hook=/bin/oomdelayfs-oci-hook
hook-args=--shadow;/run/oomdelayfs/shadow
K
export OOMDELAYFS_CONFIG=/tmp/oomdelayfs-runtime.conf
# the hook as podman's and CRI-O's hooks.d put it into config.json (packaging/oci/oomdelayfs.json)
hook='"createRuntime":[{"path":"/bin/oomdelayfs-oci-hook","args":["oomdelayfs-oci-hook"],"timeout":10}]'

# ---- A, without oomdelayfs: the baseline
# runc and crun remove a container's cgroup when it ends: its kills are counted in the
# parent's memory.events (hierarchical)
pk() { evkey "$OOMD_CG" oom_kill; }
bundle a0 "" "" "" "$INSIDE; exec odt hog 256" >/dev/null
p0=$(pk)
start a0 "$RT"
finish "$RUN_PID"; rc_a0=$RC
[ "$rc_a0" = 137 ] || fail "plain container without oomdelayfs exited $rc_a0, not 137 (SIGKILL): $(cat "$IO/a0.out")"
k_a0=$(($(pk) - p0))
[ "$k_a0" -ge 1 ] || fail "plain container died without an OOM kill"
grep -q 'statfs /sys/fs/cgroup 0x63677270 cgroup2' "$IO/a0.detect" || fail "baseline: $(cat "$IO/a0.detect")"

# ---- a container that asks while no daemon serves the shadow does not start (its process
# never runs), and a bad annotation value is refused by the shim before the runtime runs
# (runc puts the hook's stderr into its error; crun only into the file its annotation
# run.oci.hooks.stderr names)
bundle x1 "" "\"org.oomdelayfs.oom_delay_millisecs\":\"1000\",\"run.oci.hooks.stderr\":\"$IO/x1.hookerr\"" "" "$INSIDE" >/dev/null
start x1 oomdelayfs-runtime
finish "$RUN_PID"; rc_x1=$RC
[ "$rc_x1" != 0 ] || fail "a container asking for a delay started with no daemon"
[ ! -e "$IO/x1.ls" ] || fail "the process of a container whose hook failed ran"
cat "$IO/x1.out" "$IO/x1.hookerr" 2>/dev/null | grep -q 'oomdelayfs-oci-hook: .*oomdelayfs serving /run/oomdelayfs/shadow' ||
	fail "no reason from the hook in $RT's output: $(cat "$IO/x1.out" "$IO/x1.hookerr" 2>&1)"
bundle x2 "" '"org.oomdelayfs.oom_delay_millisecs":"soon"' "" "$INSIDE" >/dev/null
start x2 oomdelayfs-runtime
finish "$RUN_PID"; rc_x2=$RC
[ "$rc_x2" = 1 ] && grep -q 'oomdelayfs-runtime: .*oom_delay_millisecs="soon"' "$IO/x2.out" ||
	fail "the shim did not refuse a bad annotation (exit $rc_x2): $(cat "$IO/x2.out")"
[ ! -e "$IO/x2.ls" ] || fail "the process of a container with a bad annotation ran"

start_daemon /run/oomdelayfs/shadow
SH=/run/oomdelayfs/shadow${OOMD_CG#$CGROOT}

# ---- A, through the shim with the daemon up, and the hook in its config.json too (as a
# hooks.d file with "always" would put it): nothing changes
ba=$(bundle a1 "" "" "$hook" "$INSIDE; exec odt hog 256")
cp "$ba/config.json" /tmp/a1.before
p0=$(pk)
start a1 oomdelayfs-runtime
finish "$RUN_PID"; rc_a1=$RC
cmp -s "$ba/config.json" /tmp/a1.before || fail "the shim changed the config.json of a container that asked for nothing"
[ "$rc_a1" = 137 ] || fail "plain container through the shim exited $rc_a1, not 137: $(cat "$IO/a1.out")"
k_a1=$(($(pk) - p0))
[ "$k_a1" = "$k_a0" ] || fail "plain container: oom_kill $k_a1 with oomdelayfs, $k_a0 without"
cmp -s "$IO/a0.ls" "$IO/a1.ls" || fail "plain container's /sys/fs/cgroup differs with oomdelayfs: $(diff "$IO/a0.ls" "$IO/a1.ls" | tr '\n' ' ')"
grep -q 'top=cgroup2' "$IO/a1.detect" && grep -q 'cgroup2$' "$IO/a1.detect" ||
	fail "plain container does not see cgroup2 alone: $(cat "$IO/a1.detect")"
grep -q '^memory.oom_control$' "$IO/a1.ls" && fail "plain container has memory.oom_control"

# ---- B: disableOOMKiller through the shim: held, then the host raises the limit
# (its cgroup mount read-only, as Docker's: the shadow over it is read-only too, so the
# container cannot end its own hold by writing 0)
bb=$(bundle b ',"disableOOMKiller":true' "" "" "$INSIDE; cat /sys/fs/cgroup/memory.oom_control >/io/b.oc; echo 0 2>/io/b.rofs >/sys/fs/cgroup/memory.oom_control; echo \$? >/io/b.rorc; exec odt hog 64 --exit --report /io/b.report" ro)
start b oomdelayfs-runtime
B_PID=$RUN_PID
wait_for 30000 uoom "$SH/b" || fail "container b not held within 30 s: $(cat "$IO/b.out"); inside: $(cat "$IO/b.oc" "$IO/b.detect" "$IO/b.rofs" 2>&1 | tr '\n' ' '); config: $(cat "$bb/config.json")"
grep -q '"org.oomdelayfs.oom_kill_disable":"true"' "$bb/config.json" || fail "the shim did not move disableOOMKiller to the annotation: $(cat "$bb/config.json")"
grep -q 'disableOOMKiller' "$bb/config.json" && fail "disableOOMKiller is still in config.json ($RT would see it)"
k0=$(evkey "$OOMD_CG/b" oom_kill)
p0=$(pk)
t0=$(now_ms)
while [ $(($(now_ms) - t0)) -lt 3000 ]; do
	alive "$B_PID" || fail "container b ended $(($(now_ms) - t0)) ms into its hold: $(cat "$IO/b.out")"
	[ "$(evkey "$OOMD_CG/b" oom_kill)" = "$k0" ] || fail "oom_kill moved in container b's hold"
	usleep 100000
done
ub=$(current "$OOMD_CG/b")
t1=$(now_ms)
"$RT" update --memory $((128 * MiB)) b || fail "$RT update --memory failed"
finish "$B_PID"; rc_b=$RC
traise=$(($(now_ms) - t1))
[ "$rc_b" = 0 ] || fail "container b exited $rc_b after the raise, not 0: $(cat "$IO/b.out")"
[ "$(pk)" = "$p0" ] || fail "container b: oom_kill moved"
[ "$(odt progress "$IO/b.report")" = 65536 ] || fail "container b's hog reached $(odt progress "$IO/b.report") KiB, not 65536"
grep -q '^oom_kill_disable 1' "$IO/b.oc" || fail "memory.oom_control inside b: $(cat "$IO/b.oc")"
[ "$(cat "$IO/b.rorc")" != 0 ] && grep -q 'Read-only file system' "$IO/b.rofs" ||
	fail "b's read-only /sys/fs/cgroup took a write of memory.oom_control: $(cat "$IO/b.rorc" "$IO/b.rofs")"
grep -q '^memory.oom_delay_millisecs$' "$IO/b.ls" && grep -q '^cgroup.event_control$' "$IO/b.ls" ||
	fail "no synthetic files in b's /sys/fs/cgroup: $(tr '\n' ' ' <"$IO/b.ls")"
# every file of the plain container's listing is there too
missing=$(grep -vxF -f "$IO/b.ls" "$IO/a1.ls" | tr '\n' ' ')
[ -z "$missing" ] || fail "b's /sys/fs/cgroup lacks $missing"
# cgroup.procs: the container's own pids (sh is its pid 1)
grep -qx 1 "$IO/b.procs" || fail "cgroup.procs inside b does not list pid 1: $(tr '\n' ' ' <"$IO/b.procs")"
awk '$1 > 50 {bad = 1} END {exit bad}' "$IO/b.procs" || fail "cgroup.procs inside b lists host pids: $(tr '\n' ' ' <"$IO/b.procs")"
grep -q '^mountinfo cgroup2 /sys/fs/cgroup root=/ lines=1 top=fuse' "$IO/b.detect" ||
	fail "b: the cgroup2 mount is not underneath the shadow: $(cat "$IO/b.detect")"
grep -q "^limit /sys/fs/cgroup/memory.max $L" "$IO/b.detect" || fail "b: JVM-style limit: $(cat "$IO/b.detect")"
grep -q 'statfs /sys/fs/cgroup 0x65735546 fuse' "$IO/b.detect" || fail "b: statfs: $(cat "$IO/b.detect")"
grep -q '^delay /sys/fs/cgroup/memory.oom_delay_millisecs error' "$IO/a1.detect" || fail "a1: $(cat "$IO/a1.detect")"

# ---- C: the delay annotation, the hook as hooks.d injects it; a v1 listener inside
T=2000
bundle c "" "\"org.oomdelayfs.oom_delay_millisecs\":\"$T\"" "$hook" \
	"$INSIDE; cat /sys/fs/cgroup/memory.oom_delay_millisecs >/io/c.t; v1listener /sys/fs/cgroup --count 1 --timeout 60000 --ready /io/c.ready >/io/c.listen 2>&1 & while [ ! -e /io/c.ready ]; do usleep 10000; done; odt hog 256" >/dev/null
rm -f "$IO/c.ready"
# the kill is watched on the parent (the runtime removes the cgroup right after it), from
# before the container starts: a watcher started once the cgroup appeared once missed it on
# a loaded host (6.1: the kill came 0.5 s after the deadline, the watcher saw none)
kill_watch "$OOMD_CG"
start c "$RT"
C_PID=$RUN_PID
wait_for 20000 test -d "$OOMD_CG/c" || fail "container c's cgroup never appeared: $(cat "$IO/c.out")"
k0=0 # a new cgroup
# the hold is seen by its deadline (persisted state, or the daemon's log line): a shell
# descheduled under a loaded TCG host can miss a T-long under_oom 1; rule 9 (no kill before
# the deadline) is kill_late's check, by a memory-locked watcher that cannot miss it
wait_for 30000 _has_deadline "$OOMD_CG/c" || fail "container c not held within 30 s: $(cat "$IO/c.out")"
dlns=$(deadline_ns "$OOMD_CG/c"); dl=$((dlns / 1000000))
held_until "$dl" "$OOMD_CG/c" "$k0" "$C_PID"
finish "$C_PID"; rc_c=$RC
[ "$rc_c" = 137 ] || fail "container c exited $rc_c, not 137 (SIGKILL): $(cat "$IO/c.out")"
kl=$(kill_late "$OOMD_CG" "$dlns")
kt=$(kill_times "$OOMD_CG/c" "$dlns")
[ "$(cat "$IO/c.t")" = "$T" ] || fail "memory.oom_delay_millisecs inside c read $(cat "$IO/c.t"), not $T"
grep -q '^signal 1 .*under_oom 1' "$IO/c.listen" || fail "the v1 listener inside c was not notified: $(cat "$IO/c.listen")"
grep -qx 1 "$IO/c.procs" || fail "cgroup.procs inside c: $(tr '\n' ' ' <"$IO/c.procs")"
# ---- D: the delay with org.oomdelayfs.mount=false (for systemd inside): the setting is
# applied, /sys/fs/cgroup stays the runtime's cgroup2 mount alone
rm -f "$IO/d.go"
bundle d "" "\"org.oomdelayfs.oom_delay_millisecs\":\"$T\",\"org.oomdelayfs.mount\":\"false\"" "$hook" \
	"$INSIDE; while [ ! -e /io/d.go ]; do usleep 10000; done" >/dev/null
start d "$RT"
wait_for 20000 test -s "$IO/d.procs" || fail "container d did not run: $(cat "$IO/d.out")"
td=$(cat "$SH/d/memory.oom_delay_millisecs")
touch "$IO/d.go"
finish "$RUN_PID"; rc_d=$RC
[ "$rc_d" = 0 ] || fail "container d exited $rc_d: $(cat "$IO/d.out")"
[ "$td" = "$T" ] || fail "container d's delay reads $td through the host's shadow, not $T"
grep -q 'statfs /sys/fs/cgroup 0x63677270 cgroup2' "$IO/d.detect" && grep -q 'top=cgroup2' "$IO/d.detect" ||
	fail "container d (mount=false) does not see cgroup2 alone: $(cat "$IO/d.detect")"
cmp -s "$IO/a1.ls" "$IO/d.ls" || fail "container d's /sys/fs/cgroup is not the runtime's: $(diff "$IO/a1.ls" "$IO/d.ls" | tr '\n' ' ')"

# ---- E: the delay in a container without a cgroup namespace: the runtime's cgroup2 mount
# then has the container's cgroup as its root, which the JVM-style lookup must follow
rm -f "$IO/e.go"
be=$(bundle e "" "\"org.oomdelayfs.oom_delay_millisecs\":\"$T\"" "$hook" \
	"$INSIDE; while [ ! -e /io/e.go ]; do usleep 10000; done")
sed -i 's/,{"type":"cgroup"}//' "$be/config.json"
grep -q '"type":"cgroup"}' "$be/config.json" && fail "container e still has a cgroup namespace"
start e "$RT"
wait_for 20000 test -s "$IO/e.procs" || fail "container e did not run: $(cat "$IO/e.out")"
touch "$IO/e.go"
finish "$RUN_PID"; rc_e=$RC
[ "$rc_e" = 0 ] || fail "container e exited $rc_e: $(cat "$IO/e.out")"
# whatever root the runtime gave its cgroup2 mount, the shadow over it shows the same tree:
# the JVM-style lookup finds L and the delay in the container's own directory
grep -q "^mountinfo cgroup2 /sys/fs/cgroup root=[^ ]* lines=1 top=fuse" "$IO/e.detect" &&
	grep -q "^limit [^ ]*/memory.max $L\$" "$IO/e.detect" &&
	grep -q "^delay [^ ]*/memory.oom_delay_millisecs $T\$" "$IO/e.detect" ||
	fail "container e (no cgroup namespace): $(cat "$IO/e.detect")"
grep -q '^statfs /sys/fs/cgroup 0x65735546 fuse' "$IO/e.detect" || fail "container e: not covered: $(cat "$IO/e.detect")"

# ---- F: a Docker 20.10 container asks by label (oci/dockerlabels.h): the shim finds dockerd's
# saved container under its data-root (here the layout dockerd 20.10 writes) by the container
# ID; a label that comes from the image, and a file others may write, are refused
DR=/tmp/dockerd FID=$(printf 'f%.0s' $(seq 64)) IMGID=$(printf 'e%.0s' $(seq 64))
mkdir -p "$DR/containers/$FID" "$DR/image/overlay2/imagedb/content/sha256"
echo '{"config":{"Labels":{"org.oomdelayfs.oom_kill_disable":"true"}}}' >"$DR/image/overlay2/imagedb/content/sha256/$IMGID"
printf '[docker]\ndata-root=%s\n' "$DR" >>"$OOMDELAYFS_CONFIG"
saved() { # saved LABELS MODE: dockerd's config.v2.json of container $FID
	printf '{"ID":"%s","Image":"sha256:%s","Driver":"overlay2","Config":{"Labels":{%s}}}' \
		"$FID" "$IMGID" "$1" >"$DR/containers/$FID/config.v2.json"
	chmod "$2" "$DR/containers/$FID/config.v2.json"
}
saved '"org.oomdelayfs.oom_kill_disable":"true"' 600
bundle "$FID" "" "" "" "$INSIDE" >/dev/null
start "$FID" oomdelayfs-runtime
finish "$RUN_PID"; rc_f1=$RC
[ "$rc_f1" = 1 ] && grep -q 'comes from the image' "$IO/$FID.out" || fail "the image's label was taken (exit $rc_f1): $(cat "$IO/$FID.out")"
saved '"org.oomdelayfs.oom_delay_millisecs":"1500"' 622
start "$FID" oomdelayfs-runtime
finish "$RUN_PID"; rc_f2=$RC
[ "$rc_f2" = 1 ] && grep -q 'not a file only root writes' "$IO/$FID.out" || fail "a config.v2.json others may write was taken (exit $rc_f2): $(cat "$IO/$FID.out")"
[ ! -e "$IO/$FID.ls" ] || fail "the process of a refused Docker container ran"
saved '"org.oomdelayfs.oom_delay_millisecs":"1500","com.example":"x"' 600
bf=$(bundle "$FID" "" "" "" "$INSIDE; exec odt hog 256")
kill_watch "$OOMD_CG"
start "$FID" oomdelayfs-runtime
F_PID=$RUN_PID
wait_for 30000 _has_deadline "$OOMD_CG/$FID" 2>/dev/null || fail "the labelled container not held within 30 s: $(cat "$IO/$FID.out")"
dlns=$(deadline_ns "$OOMD_CG/$FID")
held_until $((dlns / 1000000)) "$OOMD_CG/$FID" 0 "$F_PID"
finish "$F_PID"; rc_f=$RC
[ "$rc_f" = 137 ] || fail "the labelled container exited $rc_f, not 137: $(cat "$IO/$FID.out")"
klf=$(kill_late "$OOMD_CG" "$dlns")
grep -q '"org.oomdelayfs.oom_delay_millisecs":"1500"' "$bf/config.json" && ! grep -q com.example "$bf/config.json" ||
	fail "the shim did not copy exactly our label into the annotations: $(cat "$bf/config.json")"

stop_daemon
pass "$RT: no daemon -> exit $rc_x1, bad annotation -> exit $rc_x2, the process never ran;" \
	"plain container killed (exit 137, oom_kill $k_a0) with and without oomdelayfs, same $(wc -l <"$IO/a1.ls") files, cgroup2 only;" \
	"disableOOMKiller held 3 s at $(mib "$ub") MiB, '$RT update --memory 128M' -> exit 0 after ${traise} ms (64 MiB touched, no kill);" \
	"delay $T ms held, killed $kl ms after the deadline (the daemon's memory.max write began +${kt% *} ms, returned +${kt#* } ms; exit 137), v1 listener inside notified;" \
	"inside: $(wc -l <"$IO/b.ls") files (synthetic ones too), read-only kept (EROFS), cgroup.procs '$(tr '\n' ' ' <"$IO/b.procs" | sed 's/ $//')'," \
	"mountinfo: cgroup2 under fuse, memory.max $L via the mount point; statfs: FUSE_SUPER_MAGIC;" \
	"mount=false: delay $td set, statfs cgroup2, the runtime's files;" \
	"Docker label: delay 1500 ms held, killed $klf ms after the deadline; image's label and a writable config.v2.json refused;" \
	"no cgroup namespace: cgroup2 $(sed -n 's/^mountinfo cgroup2 \([^ ]*\) \(root=[^ ]*\).*/\2/p' "$IO/e.detect") under the shadow of the same tree, $(sed -n 's/^limit \([^ ]*\) .*/\1/p' "$IO/e.detect") reads L"
