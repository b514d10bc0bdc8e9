# x-hook-stages: an experiment, not part of the suite. What each OCI hook stage sees under
# Debian's runc 1.1.5 and crun 1.8.1: the hook's own namespaces, the state on stdin, the init
# process's cgroup and mounts, and whether the limit is already written. It chose the stage
# of oomdelayfs-oci-hook (docs/CONTAINERS.md). Run it by copying it among the scenarios:
#   cp tests/vm/experiments/x-hook-stages.sh tests/vm/scenarios/
#   tests/vm/run-vm.sh --build-dir build --kernel 6.12 --scenario x-hook-stages
#   rm tests/vm/scenarios/x-hook-stages.sh
# Seen on 2026-12-04 (6.12): prestart and createRuntime run in the runtime's namespaces with
# state.pid = the init process, already in its cgroup (memory.max written) and with the
# container's mounts made under <rootfs> in its mount namespace (cgroup2 at
# <rootfs>/sys/fs/cgroup); createContainer runs in the container's namespaces (runc: pid 1;
# crun: pid 0); startContainer fails under both ("no such file": the path resolves in the
# container's root); crun refuses disableOOMKiller ("cannot disable OOM killer with cgroupv2").
# The config asks for /sys, /sys/fs/cgroup and the bind mounts read-only: at createRuntime runc's
# mounts already are ("ro,nosuid,..."), crun's are still "rw" (it remounts them later).
# timeout: 120
# image: containers
. /oomd/lib.sh
cat >/tmp/probehook <<'H'
#!/bin/sh
st=$(cat)
pid=$(echo "$st" | sed -n 's/.*"pid": *\([0-9]*\).*/\1/p')
{
echo "== $1 self=$$ mntns=$(readlink /proc/self/ns/mnt) pidns=$(readlink /proc/self/ns/pid) cgns=$(readlink /proc/self/ns/cgroup)"
echo "state: $st"
echo "self cgroup: $(cat /proc/self/cgroup)"
echo "init $pid mntns=$(readlink /proc/$pid/ns/mnt) cgns=$(readlink /proc/$pid/ns/cgroup) cgroup: $(cat /proc/$pid/cgroup)"
echo "init root: $(readlink /proc/$pid/root)  exe: $(readlink /proc/$pid/exe)"
grep -e cgroup -e ' / ' -e rootfs /proc/$pid/mountinfo | sed 's/^/  mi: /'
cg=$(sed -n 's/^0:://p' /proc/$pid/cgroup)
echo "memory.max: $(cat /sys/fs/cgroup$cg/memory.max 2>&1)"
} >>/tmp/probe.log 2>&1
exit 0
H
chmod +x /tmp/probehook
B=/tmp/bundle; mkdir -p $B/rootfs/bin $B/rootfs/lib $B/rootfs/lib64 $B/rootfs/proc $B/rootfs/sys $B/rootfs/dev $B/rootfs/tmp
hooks() { for s in prestart createRuntime createContainer startContainer poststart; do
	printf '"%s":[{"path":"/tmp/probehook","args":["probehook","%s"]}],' $s $s; done; }
mkcfg() { # cgroupsPath extra-memory
cat >$B/config.json <<J
{"ociVersion":"1.0.2","process":{"terminal":false,"user":{"uid":0,"gid":0},"args":["/bin/sh","-c","cat /proc/self/cgroup; grep cgroup /proc/self/mountinfo; ls /sys/fs/cgroup | head -3"],"env":["PATH=/bin"],"cwd":"/"},
"root":{"path":"rootfs","readonly":true},"hostname":"c",
"mounts":[{"destination":"/proc","type":"proc","source":"proc"},
{"destination":"/dev","type":"tmpfs","source":"tmpfs","options":["nosuid","mode=755"]},
{"destination":"/sys","type":"sysfs","source":"sysfs","options":["nosuid","noexec","nodev","ro"]},
{"destination":"/sys/fs/cgroup","type":"cgroup","source":"cgroup","options":["nosuid","noexec","nodev","relatime","ro"]},
{"destination":"/bin","type":"bind","source":"/bin","options":["rbind","ro"]},
{"destination":"/lib","type":"bind","source":"/lib","options":["rbind","ro"]},
{"destination":"/lib64","type":"bind","source":"/lib64","options":["rbind","ro"]}],
"annotations":{"org.oomdelayfs.oom_delay_millisecs":"1000"},
"hooks":{$(hooks | sed 's/,$//')},
"linux":{"cgroupsPath":"$1","resources":{"memory":{"limit":33554432$2}},
"namespaces":[{"type":"pid"},{"type":"ipc"},{"type":"uts"},{"type":"mount"},{"type":"cgroup"}]}}
J
}
ls -la /lib64 /lib | head -5
for rt in runc crun; do
	mkcfg "/ctr-$rt" ""
	echo "######## $rt cgroupfs" >>/tmp/probe.log
	(cd $B && $rt run --no-pivot p-$rt) >>/tmp/probe.log 2>&1; echo "rc=$?" >>/tmp/probe.log
	mkcfg "/ctr-$rt-d" ',"disableOOMKiller":true'
	echo "######## $rt disableOOMKiller" >>/tmp/probe.log
	(cd $B && $rt run --no-pivot p2-$rt) >>/tmp/probe.log 2>&1; echo "rc=$?" >>/tmp/probe.log
	$rt delete -f p-$rt 2>/dev/null; $rt delete -f p2-$rt 2>/dev/null
done
cat /tmp/probe.log
pass "stages logged above"
