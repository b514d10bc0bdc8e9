#!/bin/sh
# runner.sh - the sd VM's runner (on the payload disk; guest/oomd-sd-boot runs it from
# oomd-sd-boot.service once multi-user.target is reached, output on the serial console).
# Kernel command line (tests/sd/run-sd.sh sets it):
#   oomd.kernel=LABEL     label printed in the result lines
#   oomd.only=a,b         the scenarios of this boot, in this order
#   oomd.timeout=SECS     default per-scenario time-out (a scenario may say "# timeout: N")
# Prints "OOMD-SD-BOOT <kernel> ..." (boot figures), per scenario "=== NAME" and
#   RESULT <kernel> <scenario> PASS|FAIL|SKIP <figures or reason>
# then "OOMD-SD-DONE <kernel>", and powers off. A scenario runs as a transient service of its own
# (systemd-run --wait --pipe: root, the system's environment, its own cgroup; RuntimeMaxSec= is its
# time-out; whatever it leaves running is killed with it). After a FAIL the boot ends with
# "OOMD-SD-STOP <kernel> <scenario>": run-sd.sh boots a fresh VM for the scenarios left, so no
# scenario runs on a system another one broke.
P=/payload
# the test programs last: tests/vm/progs/ctr would hide containerd's ctr
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$P/bin
export LC_ALL=C.UTF-8
KERNEL='?' ONLY='' TDEFAULT=120
for arg in $(cat /proc/cmdline); do
	case $arg in
	oomd.kernel=*) KERNEL=${arg#oomd.kernel=} ;;
	oomd.only=*) ONLY=$(echo "${arg#oomd.only=}" | tr ',' ' ') ;;
	oomd.timeout=*) TDEFAULT=${arg#oomd.timeout=} ;;
	esac
done
. "$P/lib.sh" # cpus_up, sd_context

up=$(cut -d' ' -f1 /proc/uptime)
pid1=$(readlink /proc/1/exe)
fstype=$(stat -fc %T /sys/fs/cgroup)
state=$(systemctl is-system-running 2>&1)
echo "OOMD-SD-BOOT $KERNEL uptime=${up}s kernel=$(uname -r) pid1=$pid1 cgroupfs=$fstype" \
	"system=$state $(systemctl --version | head -n 1 | cut -d' ' -f1-2 | tr ' ' '=')" \
	"mem=$(awk '/MemTotal/{print int($2 / 1024)}' /proc/meminfo)MiB"
echo "oomd-sd: $(systemd-analyze time 2>&1 | head -n 1)"
echo "oomd-sd: slowest units: $(systemd-analyze blame --no-pager 2>/dev/null | head -n 6 | awk '{$1=$1; print}' | tr '\n' ',')"
if [ "$state" != running ]; then
	echo "oomd-sd: failed units:"
	systemctl --failed --no-legend --no-pager 2>&1 | sed 's/^/  /'
fi
# the kernel booted on one CPU (see the initramfs's init); the rest now that the system is up
cpus_up
echo "oomd-sd: $(grep -c '^processor' /proc/cpuinfo) cpus, $(cat /sys/devices/system/cpu/online) online"
# make the console quiet enough to read (OOM reports stay in dmesg and the journal)
echo 2 >/proc/sys/kernel/printk 2>/dev/null

bad=''
[ "$pid1" = /usr/lib/systemd/systemd ] || [ "$pid1" = /lib/systemd/systemd ] || bad="PID 1 is $pid1, not systemd"
[ "$fstype" = cgroup2fs ] || bad="${bad:+$bad; }/sys/fs/cgroup is $fstype, not cgroup2 (unified)"

stop_after=''
for n in $ONLY; do
	f=$P/scenarios/$n.sh
	res=/run/oomd-sd/result.$n
	mkdir -p /run/oomd-sd
	rm -f "$res"
	if [ -n "$bad" ]; then
		echo "RESULT $KERNEL $n FAIL the test bed is broken: $bad"
		continue
	fi
	if [ ! -f "$f" ]; then
		echo "RESULT $KERNEL $n FAIL no such scenario"
		continue
	fi
	t=$(sed -n 's/^# timeout: *\([0-9]*\).*/\1/p' "$f" | head -n 1)
	t=${t:-$TDEFAULT}
	echo "=== $n (timeout ${t}s) at uptime $(cut -d' ' -f1 /proc/uptime)s"
	start=$(date +%s)
	# the journal since the scenario began: the cursor of its last entry (journalctl prints the
	# cursor after the entries it shows, so -n 0 prints none; --since=@EPOCH matched nothing
	# in the VM, whatever the reason)
	since=$(journalctl -n 1 --show-cursor --no-pager -o cat 2>/dev/null | sed -n 's/^-- cursor: //p' | tail -n 1)
	systemd-run --unit="oomd-sd-$n" --description="sd scenario $n" --wait --pipe --quiet --collect \
		-p RuntimeMaxSec="$t" -p TimeoutStopSec=15 -p OOMScoreAdjust=-500 \
		--setenv=OOMD_SCENARIO="$n" --setenv=OOMD_KERNEL="$KERNEL" --setenv=OOMD_RESULT="$res" \
		--setenv=OOMD_CURSOR="$since" --setenv=PATH="$PATH" --setenv=LC_ALL=C.UTF-8 --setenv=HOME=/root \
		/bin/sh "$f" 2>&1
	rc=$?
	end=$(date +%s)
	cpus_up
	# test units the scenario made (lib.sh names them oomdt-*) go with it
	for u in $(systemctl list-units --all --plain --no-legend 'oomdt-*' 2>/dev/null | awk '{print $1}'); do
		systemctl stop "$u" >/dev/null 2>&1
	done
	if [ -s "$res" ]; then
		line=$(head -n 1 "$res")
	elif [ $((end - start)) -ge "$t" ]; then
		line="FAIL timed out after ${t}s"
	else
		line="FAIL scenario exited with status $rc without a result"
	fi
	case $line in
	FAIL*)
		sd_context "$n" "$since" 2>&1 | sed "s/^/[$n] /"
		stop_after=$n
		;;
	esac
	echo "RESULT $KERNEL $n $line"
	echo "oomd-sd: $n took $((end - start)) s" # tests/vm/costs-from-logs.sh
	[ -z "$stop_after" ] || break
done
if [ -n "$stop_after" ]; then
	echo "OOMD-SD-STOP $KERNEL $stop_after"
fi
echo "OOMD-SD-DONE $KERNEL"
sync
systemctl poweroff -ff
