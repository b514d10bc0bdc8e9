#!/bin/sh
# run-vm.sh [--kernel 6.1|6.12|7|all] [--scenario NAME]... [--build-dir DIR] [--list]
# (without --scenario: every scenario but the bench-* benchmarks and the demo)
#
# Runs the scenarios (tests/vm/scenarios/*.sh) inside QEMU on Debian's 6.1, 6.12 and newest 7.x
# cloud kernels (fetch-kernels.sh says which 7.x). Prints "PASS|FAIL|SKIP <kernel> <scenario>  <figures or reason>" per scenario and
# kernel, and a closing "N passed, N failed, N skipped". Exits non-zero on any failure, a kernel
# panic, a missing result or a VM time-out. The one exception: a kernel that panics while it
# boots, before any scenario began, is booted once more, with a NOTE line in the summary (the
# panicked boot's log is kept as serial-<kernel>.boot-panic.log).
#
# Environment: OOMD_KERNEL_CACHE (kernel cache, default /var/cache/oomdelayfs/kernels),
# OOMD_VM_KVM=1 (use KVM instead of TCG), OOMD_VM_TIMEOUT (seconds per VM; default: the sum of
# the selected scenarios' time-outs plus 120),
# OOMD_VM_PARALLEL=N (at most N kernels' VMs at once, default 2; 0 or 1: one after the other;
# every boot also takes one of the host's OOMD_VM_SLOTS, default 2, shared with tests/sd: slot.sh), OOMD_VM_MEM (MiB, default 1024),
# OOMD_VM_SMP (default 2), OOMD_VM_SCENARIO_TIMEOUT (default per-scenario timeout, 60),
# OOMD_VM_APPEND (more kernel command-line words, for experiments: e.g. preempt=full).
# OOMD_VM_SHARDS=N (default 1): each kernel's scenarios in N boots of about equal length (dealt
# by the durations CI measured, tests/vm/costs, shard.sh; those that run first at the head of the
# first), which the slots run like separate kernels: the CI run (scripts/test.sh) sets 3, so that
# no lump of 10-20 minutes leaves one slot idle while the last one runs alone.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
SRCROOT=$(cd "$HERE/../.." && pwd)
KERNELS=all
SCENARIOS=''
BUILD=''
LIST=0
CACHE=${OOMD_KERNEL_CACHE:-/var/cache/oomdelayfs/kernels}

die() { echo "run-vm: ERROR: $*" >&2; exit 2; }
usage() { sed -n '2,16s/^# \{0,1\}//p' "$0"; exit 2; }

while [ $# -gt 0 ]; do
	case $1 in
	--kernel) KERNELS=${2:-}; shift 2 ;;
	--scenario) SCENARIOS="$SCENARIOS ${2:-}"; shift 2 ;;
	--build-dir) BUILD=${2:-}; shift 2 ;;
	--list) LIST=1; shift ;;
	-h|--help) usage ;;
	*) echo "run-vm: unknown argument: $1" >&2; usage ;;
	esac
done

ALL=$(cd "$HERE/scenarios" && ls ./*.sh | sed 's|^\./||; s|\.sh$||' | sort)
if [ "$LIST" = 1 ]; then
	echo "$ALL"
	exit 0
fi
case $KERNELS in
all) KERNELS="6.1 6.12 7" ;;
6.1|6.12|7) ;;
*) die "--kernel must be 6.1, 6.12, 7 or all" ;;
esac
if [ -z "$SCENARIOS" ]; then
	# benchmarks (bench-*, tests/vm/bench.sh) and the demo (scripts/run.sh) print figures
	# but test nothing new: they run only when named
	# and so do scenarios whose header says "# only when named" (f-scale: minutes, 3 GiB)
	SCENARIOS=$(echo "$ALL" | grep -v -e '^bench-' -e '^demo$' -e '^zz-' |
		while read -r s; do grep -q '^# only when named' "$HERE/scenarios/$s.sh" || echo "$s"; done)
else
	for s in $SCENARIOS; do
		echo "$ALL" | grep -qx "$s" || die "no scenario '$s' (see --list)"
	done
fi
[ -n "$BUILD" ] || BUILD=$SRCROOT/build
[ -d "$BUILD" ] || die "build dir $BUILD does not exist (meson setup build && meson compile -C build)"
BUILD=$(cd "$BUILD" && pwd)
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 not found (apt-get install qemu-system-x86)"

# global VM time-out: the selected scenarios' time-outs plus two minutes for boot and clean-up
if [ -n "${OOMD_VM_TIMEOUT:-}" ]; then
	VMTIMEOUT=$OOMD_VM_TIMEOUT
else
	VMTIMEOUT=120
	for s in $SCENARIOS; do
		t=$(sed -n 's/^# timeout: *\([0-9]*\).*/\1/p' "$HERE/scenarios/$s.sh" | head -n 1)
		VMTIMEOUT=$((VMTIMEOUT + ${t:-${OOMD_VM_SCENARIO_TIMEOUT:-60}} + 2))
	done
fi

OUTDIR=$BUILD/vm
mkdir -p "$OUTDIR"
# runc, crun and their libraries make the image 2.7 times as large (4.3 -> 11.7 MB): only for
# scenarios whose header says "# image: containers" (c-*)
IMGOPTS=''
for s in $SCENARIOS; do
	if grep -q '^# image: containers' "$HERE/scenarios/$s.sh"; then IMGOPTS=--containers; fi
done

# scenarios whose header says "# disk: swap" (d-v1memsw, bench-psi) get an emulated NVMe disk of
# 256 MiB (built into every kernel we boot; virtio-blk, zram and loop are modules there) that
# the scenario makes swap of itself (swap_on in lib.sh); the others boot without one
DISKOPTS=''
for s in $SCENARIOS; do
	if grep -q '^# disk: swap' "$HERE/scenarios/$s.sh"; then DISKOPTS=swap; fi
done

OOMD_KERNELS=$KERNELS "$HERE/fetch-kernels.sh" "$CACHE" || { echo "run-vm: cannot get the kernels"; echo "0 passed, 1 failed, 0 skipped"; exit 1; }

ACCEL="-accel tcg"
[ "${OOMD_VM_KVM:-0}" = 1 ] && ACCEL="-accel kvm -cpu host"
. "$HERE/slot.sh"
# scenarios whose header says "# runs first" go first (d-v1diff: the memory controller can move
# to a v1 hierarchy only while no dying memcg pins it, and the container scenarios leave some)
first='' rest=''
for s in $SCENARIOS; do
	if grep -q '^# runs first' "$HERE/scenarios/$s.sh"; then first="$first $s"; else rest="$rest $s"; fi
done
SCENARIOS="$first$rest"
ONLY=$(echo $SCENARIOS | tr ' ' ',')

qemu_once() { # label image log only swapfile: one boot; its exit status
	disk=''
	if [ -n "$DISKOPTS" ]; then
		rm -f "$5"
		truncate -s 256M "$5"
		disk="-drive file=$5,if=none,id=swp,format=raw,cache=unsafe -device nvme,serial=oomdswap,drive=swp"
	fi
	# shellcheck disable=SC2086
	vm_slot timeout -k 10 "$VMTIMEOUT" qemu-system-x86_64 $ACCEL -m "${OOMD_VM_MEM:-1024}" -smp "${OOMD_VM_SMP:-2}" \
		-nographic -no-reboot -nodefaults -serial stdio \
		-kernel "$CACHE/$1/vmlinuz" -initrd "$2" $disk \
		-append "console=ttyS0 panic=-1 loglevel=4 maxcpus=1 oomd.kernel=$1 oomd.only=$4 oomd.timeout=${OOMD_VM_SCENARIO_TIMEOUT:-60} ${OOMD_VM_APPEND:-}" \
		</dev/null >>"$3" 2>&1
}

# The boots: one per kernel, or OOMD_VM_SHARDS per kernel, each named UNIT = KERNEL or
# KERNEL-sI (files serial-UNIT.log, vm-UNIT.rc), with its own scenario list in only-UNIT.
shards=${OOMD_VM_SHARDS:-1}
[ "$shards" -ge 1 ] 2>/dev/null || shards=1
units_of() { # kernel: its boot units
	if [ "$shards" = 1 ]; then echo "$1"; else seq 1 "$shards" | sed "s/^/$1-s/"; fi
}
kernel_of() { echo "${1%-s*}"; }
# each boot's scenarios: dealt by their CI durations (tests/vm/costs, shard.sh), the "runs
# first" ones at the head of boot 1
. "$HERE/shard.sh"
i=1
for line in $(shard_deal "$shards" "$HERE/costs" "$first" $SCENARIOS | tr ' ' ',' | sed 's/^$/-/'); do
	[ "$line" = - ] && line=''
	eval "only_$i=\"\$line\""
	i=$((i + 1))
done
only_of() { # unit: its comma-separated scenarios
	case $1 in *-s*) eval "echo \"\${only_${1##*-s}:-}\"" ;; *) echo "$ONLY" ;; esac
}

boot() { # unit: build the initramfs, boot, write $OUTDIR/serial-<unit>.log and .rc
	label=$(kernel_of "$1") unit=$1
	img=$OUTDIR/initramfs-$unit.cpio.gz
	log=$OUTDIR/serial-$unit.log
	swp=$OUTDIR/swap-$unit.img
	only=$(only_of "$unit")
	rm -f "$log" "$OUTDIR/vm-$unit.rc" "$OUTDIR/serial-$unit.boot-panic.log"
	if [ -z "$only" ]; then
		echo "run-vm: $unit: no scenario in this shard" >"$log"
		echo "OOMD-VM-DONE $label (empty shard)" >>"$log"
		echo 0 >"$OUTDIR/vm-$unit.rc"
		return
	fi
	# shellcheck disable=SC2086
	if ! "$HERE/build-initramfs.sh" --kernel "$label" --build-dir "$BUILD" --cache "$CACHE" --out "$img" $IMGOPTS >"$log" 2>&1; then
		echo "initramfs build failed" >>"$log"
		echo 3 >"$OUTDIR/vm-$unit.rc"
		return
	fi
	cp "$log" "$log.head"
	rc=0
	qemu_once "$label" "$img" "$log" "$only" "$swp" || rc=$?
	# A panic before the first scenario began comes from booting under TCG, not from anything
	# under test (no project code has run yet): boot once more, and say so in the summary.
	# A panic once a scenario has begun is never retried.
	if grep -aq 'Kernel panic' "$log" && ! grep -aq '^=== ' "$log"; then
		mv "$log" "$OUTDIR/serial-$unit.boot-panic.log"
		mv "$log.head" "$log"
		echo "run-vm: $unit panicked while booting, before any scenario; booting again" >>"$log"
		rc=0
		qemu_once "$label" "$img" "$log" "$only" "$swp" || rc=$?
	fi
	rm -f "$log.head" "$swp"
	echo "$rc" >"$OUTDIR/vm-$unit.rc"
}

T0=$(date +%s)
UNITS=$(for k in $KERNELS; do units_of "$k"; done | tr '\n' ' ')
echo "run-vm: kernels: $KERNELS; scenarios: $(echo $SCENARIOS); logs in $OUTDIR/serial-<kernel>.log"
# progress while the VMs run: each result line as it arrives
shown=''
# (its own loop variable: the caller's $k names the kernel about to boot; with
# OOMD_VM_PARALLEL=1 a shared one booted the last kernel in place of the second)
progress() {
	for pk in $UNITS; do
		[ -f "$OUTDIR/serial-$pk.log" ] || continue
		cat "$OUTDIR/serial-$pk.log" 2>/dev/null | tr -d '\r' | grep -ao 'RESULT .*' | while read -r line; do
			case " $shown " in *" $(echo "$line" | awk '{print $2 "/" $3}') "*) continue ;; esac
			echo "  ... $(echo "$line" | cut -c8- | cut -c1-150)"
		done
		shown="$shown $(cat "$OUTDIR/serial-$pk.log" 2>/dev/null | tr -d '\r' | grep -ao 'RESULT .*' | awk '{print $2 "/" $3}' | tr '\n' ' ')"
	done
}
# Two VMs at a time by default: each has two vCPUs, the host two cores, and the scenarios'
# timing figures were measured with two VMs sharing them. A third kernel waits for a slot.
par=${OOMD_VM_PARALLEL:-2}
# a kernel waiting for a slot must not show the previous run's results
for k in $KERNELS $UNITS; do rm -f "$OUTDIR/serial-$k.log" "$OUTDIR/vm-$k.rc"; done
[ "$par" -ge 1 ] 2>/dev/null || par=1
pids=''
for u in $UNITS; do
	while :; do
		n=0
		for p in $pids; do kill -0 "$p" 2>/dev/null && n=$((n + 1)); done
		[ "$n" -ge "$par" ] || break
		progress
		sleep 2
	done
	boot "$u" &
	pids="$pids $!"
done
if [ -n "$pids" ]; then
	while :; do
		running=0
		for p in $pids; do kill -0 "$p" 2>/dev/null && running=1; done
		progress
		[ "$running" = 1 ] || break
		sleep 2
	done
fi
for p in $pids; do wait "$p" || true; done

passed=0 failed=0 skipped=0
# CI shows only the head and the tail of a long log: every FAIL and SKIP line is printed
# once more just before the closing count (run-vm: failures:), after the serial logs' tails
notes=$OUTDIR/not-passed.txt
: >"$notes"
report() { # status kernel name text
	printf '%-4s %-4s %-22s %s\n' "$1" "$2" "$3" "$4"
	case $1 in
	PASS) passed=$((passed + 1)) ;;
	SKIP) skipped=$((skipped + 1)) ;;
	*) failed=$((failed + 1)) ;;
	esac
	[ "$1" = PASS ] || printf '%-4s %-4s %-22s %s\n' "$1" "$2" "$3" "$4" >>"$notes"
}
for k in $KERNELS; do
	log=$OUTDIR/serial-$k.log
	rc=0 undone=''
	for u in $(units_of "$k"); do
		urc=$(cat "$OUTDIR/vm-$u.rc" 2>/dev/null || echo '?')
		[ "$rc" != 0 ] || rc=$urc
		grep -aq "OOMD-VM-DONE $k" "$OUTDIR/serial-$u.log" 2>/dev/null || undone="$undone $u"
		if [ "$u" != "$k" ]; then
			[ -f "$OUTDIR/serial-$u.boot-panic.log" ] && cat "$OUTDIR/serial-$u.boot-panic.log" >>"$OUTDIR/serial-$k.boot-panic.log"
			{ echo "==== run-vm: boot $u"; cat "$OUTDIR/serial-$u.log" 2>/dev/null; } >>"$log"
		fi
	done
	tr -d '\r' <"$log" | grep -ao 'RESULT .*' >"$OUTDIR/results-$k.txt" || true
	for s in $SCENARIOS; do
		line=$(awk -v k="$k" -v s="$s" '$1 == "RESULT" && $2 == k && $3 == s' "$OUTDIR/results-$k.txt" | head -n 1)
		if [ -n "$line" ]; then
			st=$(echo "$line" | awk '{print $4}')
			txt=$(echo "$line" | cut -d' ' -f5-)
			case $st in PASS|FAIL|SKIP) ;; *) txt="bad result line: $line"; st=FAIL ;; esac
			report "$st" "$k" "$s" "$txt"
		else
			report FAIL "$k" "$s" "no result (see $log)"
		fi
	done
	if [ -f "$OUTDIR/serial-$k.boot-panic.log" ]; then
		echo "NOTE $k (vm) the first boot panicked before any scenario began and was retried:" \
			"$(tr -d '\r' <"$OUTDIR/serial-$k.boot-panic.log" | grep -a -e 'Kernel panic' -e 'Oops' -e 'BUG' -e 'RIP: 0010' |
				sed 's/^\[ *[0-9.]*\] //' | awk '!seen[$0]++' | head -n 3 | tr '\n' ';')" \
			"(log $OUTDIR/serial-$k.boot-panic.log)"
	fi
	if grep -aq 'Kernel panic' "$log"; then
		report FAIL "$k" "(vm)" "kernel panic: $(grep -a -m1 'Kernel panic' "$log" | tr -d '\r')"
	fi
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		report FAIL "$k" "(vm)" "VM timed out after ${VMTIMEOUT}s"
	elif [ "$rc" = 3 ]; then
		report FAIL "$k" "(vm)" "initramfs build failed: $(tail -n 3 "$log" | tr '\n' ' ')"
	elif [ -n "$undone" ]; then
		report FAIL "$k" "(vm)" "VM ended (rc $rc) before the runner finished (boot:$undone)"
	fi
done
for k in $KERNELS; do
	if grep -aq -e '^FAIL' -e 'RESULT .* FAIL' "$OUTDIR/results-$k.txt" 2>/dev/null || [ "$(grep -ac "OOMD-VM-DONE $k" "$OUTDIR/serial-$k.log")" -lt "$shards" ]; then
		echo "---- last 60 lines of $OUTDIR/serial-$k.log"
		tail -n 60 "$OUTDIR/serial-$k.log" | tr -d '\r'
	fi
done
echo "run-vm: took $(($(date +%s) - T0)) s"
if [ -s "$notes" ]; then
	echo "run-vm: not passed (again, for a log read from its tail):"
	cat "$notes"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
