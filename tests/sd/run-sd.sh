#!/bin/sh
# run-sd.sh --build-dir DIR [--kernel 6.12,7|all] [--scenario a,b]... [--list]
# (without --scenario: every scenario but those whose header says "# only when named")
#
# The real-systemd test bed (tests/sd/README.md): boots a Debian 12 root with systemd 252 as
# PID 1 and Debian 12's engines (build-image.sh; cached) in QEMU TCG on Debian's cloud kernels,
# with a payload disk holding the freshly built .deb, the test programs of DIR, lib.sh and the
# scenarios; runs the scenarios (tests/sd/scenarios/*.sh) there, all of a kernel in one boot,
# in the order given; after a FAIL, a hang or a panic the boot ends and a fresh one runs the
# scenarios left. Prints "PASS|FAIL|SKIP <kernel> <scenario>  <figures or reason>" per scenario
# and kernel, and a closing "N passed, N failed, N skipped"; exits non-zero on any failure.
# Serial logs: DIR/sd/serial-<kernel>[-s<shard>]-<boot>.log (OOMD_SD_SHARDS below).
#
# Environment: OOMD_SD_DEB (the .deb to install; default: scripts/build-deb.sh builds it),
# OOMD_SD_MEM (MiB, default 2560), OOMD_SD_SMP (default 2), OOMD_SD_SHARDS (each kernel's
# scenarios in N units of boots, default 1: below), OOMD_SD_PARALLEL (at
# most N kernels' (units') VMs at once, default 2; each boot also takes one of the host's
# OOMD_VM_SLOTS, default 2, shared with tests/vm: tests/vm/slot.sh), OOMD_SD_BOOT_TIMEOUT (seconds a boot may take until
# the runner starts, default 300), OOMD_SD_SCENARIO_TIMEOUT (default per-scenario time-out, 120),
# OOMD_SD_APPEND (more kernel command-line words), OOMD_SD_CACHE, OOMD_KERNEL_CACHE, OOMD_VM_KVM=1.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
KERNELS='6.12 7'
SCENARIOS=''
BUILD=''
LIST=0
KCACHE=${OOMD_KERNEL_CACHE:-/var/cache/oomdelayfs/kernels}
TDEFAULT=${OOMD_SD_SCENARIO_TIMEOUT:-120}
BOOTTO=${OOMD_SD_BOOT_TIMEOUT:-300}

die() { echo "run-sd: ERROR: $*" >&2; exit 2; }
usage() { sed -n '2,20s/^# \{0,1\}//p' "$0"; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	--kernel) KERNELS=$(echo "${2:-}" | tr ',' ' '); shift 2 ;;
	--scenario) SCENARIOS="$SCENARIOS $(echo "${2:-}" | tr ',' ' ')"; shift 2 ;;
	--build-dir) BUILD=${2:-}; shift 2 ;;
	--list) LIST=1; shift ;;
	-h|--help) usage ;;
	*) echo "run-sd: unknown argument: $1" >&2; usage ;;
	esac
done
ALL=$(cd "$HERE/scenarios" && ls ./*.sh 2>/dev/null | sed 's|^\./||; s|\.sh$||' | sort)
if [ "$LIST" = 1 ]; then
	echo "$ALL"
	exit 0
fi
[ "$KERNELS" = all ] && KERNELS='6.1 6.12 7'
for k in $KERNELS; do
	case $k in 6.1|6.12|7) ;; *) die "--kernel takes 6.1, 6.12, 7 or all" ;; esac
done
if [ -z "$SCENARIOS" ]; then
	SCENARIOS=$(echo "$ALL" | while read -r s; do
		[ -n "$s" ] && ! grep -q '^# only when named' "$HERE/scenarios/$s.sh" && echo "$s"; done)
else
	for s in $SCENARIOS; do
		echo "$ALL" | grep -qx "$s" || die "no scenario '$s' (see --list)"
	done
fi
SCENARIOS=$(echo $SCENARIOS)
[ -n "$BUILD" ] || BUILD=$TOP/build
[ -d "$BUILD" ] || die "build dir $BUILD does not exist (meson setup build && meson compile -C build)"
BUILD=$(cd "$BUILD" && pwd)
[ -x "$BUILD/tests/vm/odt" ] || die "$BUILD/tests/vm/odt is not built (meson compile -C $BUILD)"
[ "$(id -u)" = 0 ] || die "needs root (debootstrap for the image, mke2fs of root-owned files)"
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 not found (scripts/deps.sh)"
OUT=$BUILD/sd
mkdir -p "$OUT"
T0=$(date +%s)
say() { echo "run-sd: $* ($(($(date +%s) - T0)) s)"; }
summary_fail() { echo "run-sd: $1"; echo "FAIL (set-up) run-sd: $1" >"$OUT/not-passed.txt"; echo "0 passed, 1 failed, 0 skipped"; exit 1; }

OOMD_KERNELS=$KERNELS "$TOP/tests/vm/fetch-kernels.sh" "$KCACHE" || summary_fail "cannot get the kernels"
# the package, as an operator gets it: built here, or the one OOMD_SD_DEB names (scripts/test.sh
# passes what tests/pkg/test-deb.sh built from the same tree a moment before: one build saved)
if [ -n "${OOMD_SD_DEB:-}" ]; then
	[ -f "$OOMD_SD_DEB" ] || summary_fail "OOMD_SD_DEB=$OOMD_SD_DEB: no such file"
	DEB=$OOMD_SD_DEB
else
	rm -rf "$OUT/deb"
	"$TOP/scripts/build-deb.sh" "$OUT/deb" >"$OUT/build-deb.log" 2>&1 ||
		{ cat "$OUT/build-deb.log"; summary_fail "scripts/build-deb.sh failed"; }
	DEB=$(ls "$OUT"/deb/oomdelayfs_*.deb | grep -v dbgsym | head -n 1)
fi
say "package $(basename "$DEB")"
IMG=$("$HERE/build-image.sh" --deb "$DEB" 2>"$OUT/build-image.log") ||
	{ cat "$OUT/build-image.log"; summary_fail "build-image.sh failed"; }
[ -s "$OUT/build-image.log" ] && cat "$OUT/build-image.log"
say "image $IMG"

# the payload disk
P=$OUT/payload
rm -rf "$P" "$OUT/payload.img"
mkdir -p "$P/bin" "$P/deb" "$P/images" "$P/scenarios"
cp "$DEB" "$P/deb/"
for p in "$BUILD"/tests/vm/*; do
	[ -f "$p" ] && [ -x "$p" ] && cp "$p" "$P/bin/"
done
cp "$HERE/lib.sh" "$HERE/runner.sh" "$P/"
cp "$HERE"/scenarios/*.sh "$P/scenarios/"
BUSYBOX=$(command -v busybox || echo /bin/busybox)
python3 "$HERE/mkimage.py" "$BUSYBOX" "$P/images" localhost/oomd-busybox:latest ||
	summary_fail "mkimage.py failed"
mke2fs -q -t ext4 -L oomd-payload -d "$P" "$OUT/payload.img" "$(($(du -sm "$P" | cut -f1) + 32))M" >/dev/null ||
	summary_fail "mke2fs of the payload failed"

timeout_of() { # scenario: its time-out in seconds
	t=$(sed -n 's/^# timeout: *\([0-9]*\).*/\1/p' "$HERE/scenarios/$1.sh" | head -n 1)
	echo "${t:-$TDEFAULT}"
}
ACCEL="-accel tcg"
[ "${OOMD_VM_KVM:-0}" = 1 ] && ACCEL="-accel kvm -cpu host"
. "$TOP/tests/vm/slot.sh"

# boot UNIT N SCENARIOS...: one VM of UNIT (LABEL, or LABEL-sI for boot I of a kernel's
# OOMD_SD_SHARDS) running these scenarios; serial log serial-UNIT-N.log
boot() {
	unit=$1 label=${1%-s*} n=$2
	shift 2
	vmto=$BOOTTO
	for s in "$@"; do vmto=$((vmto + $(timeout_of "$s") + 20)); done
	only=$(echo "$@" | tr ' ' ',')
	log=$OUT/serial-$unit-$n.log
	# shellcheck disable=SC2086
	vm_slot timeout -k 10 "$vmto" qemu-system-x86_64 $ACCEL -m "${OOMD_SD_MEM:-2560}" -smp "${OOMD_SD_SMP:-2}" \
		-nographic -no-reboot -nodefaults -serial stdio -nic none \
		-kernel "$KCACHE/$label/vmlinuz" -initrd "$IMG/initrd-$label.gz" \
		-drive "file=$IMG/root.img,format=raw,if=virtio,snapshot=on" \
		-drive "file=$OUT/payload.img,format=raw,if=virtio,readonly=on" \
		-append "console=ttyS0 panic=-1 loglevel=4 maxcpus=1 no_timer_check systemd.show_status=error oomd.kernel=$label oomd.only=$only oomd.timeout=$TDEFAULT ${OOMD_SD_APPEND:-}" \
		</dev/null >"$log" 2>&1
}

# run_unit UNIT SCENARIOS...: boots until every one of them has a result; results-UNIT.txt
run_unit() {
	unit=$1 label=${1%-s*}
	shift
	res=$OUT/results-$unit.txt
	: >"$res"
	left=$* n=1 retried=0
	rm -f "$OUT/notes-$unit.txt"
	while [ -n "$left" ]; do
		rc=0
		boot "$unit" "$n" $left || rc=$?
		log=$OUT/serial-$unit-$n.log
		tr -d '\r' <"$log" | grep -ao 'RESULT .*' >>"$res" || true
		got=$(tr -d '\r' <"$log" | grep -ao 'RESULT .*' | awk '{print $3}' | tr '\n' ' ')
		rest=''
		for s in $left; do
			case " $got " in *" $s "*) ;; *) rest="$rest $s" ;; esac
		done
		if ! grep -aq "OOMD-SD-BOOT $label" "$log" && [ "$retried" = 0 ] && [ -n "$rest" ]; then
			# the runner never started: the boot itself failed under TCG (CI saw 7.3.4 panic at
			# 0.03 s, "IO-APIC + timer doesn't work!", on a host at load 26), before anything
			# of ours ran. Boot once more, and say so.
			retried=1
			mv "$log" "$OUT/serial-$unit-$n.boot-failed.log"
			echo "NOTE $unit: boot $n failed before the runner started (rc $rc$(grep -a -m1 'Kernel panic' "$OUT/serial-$unit-$n.boot-failed.log" | tr -d '\r' | sed 's/^\[ *[0-9.]*\] /: /' | cut -c1-100)); booting again" >>"$OUT/notes-$unit.txt"
			n=$((n + 1))
			continue
		fi
		if ! grep -aq "OOMD-SD-DONE $label" "$log" && [ -n "$rest" ]; then
			# the VM ended with no runner's DONE: the scenario under way (or the boot) failed
			why="VM ended (rc $rc)"
			[ "$rc" = 124 ] || [ "$rc" = 137 ] && why="VM timed out"
			grep -aq 'Kernel panic' "$log" && why="kernel panic: $(grep -a -m1 'Kernel panic' "$log" | tr -d '\r' | cut -c1-120)"
			cur=$(tr -d '\r' <"$log" | sed -n 's/^=== \([^ ]*\) .*/\1/p' | tail -n 1)
			victim=''
			if [ -n "$cur" ]; then
				case " $rest " in *" $cur "*) victim=$cur ;; esac
			fi
			if [ -z "$victim" ]; then
				victim=$(echo $rest | cut -d' ' -f1)
				why="$why before $victim began (boot failed)"
			fi
			echo "RESULT $label $victim FAIL $why (log $log)" >>"$res"
			rest=$(echo "$rest" | tr ' ' '\n' | grep -vx "$victim" | tr '\n' ' ')
		fi
		left=$(echo $rest)
		n=$((n + 1))
	done
}

# OOMD_SD_SHARDS=N (default 1): each kernel's scenarios in N units of about equal length (dealt
# by the durations CI measured, tests/sd/costs, tests/vm/shard.sh), each its own boots, which the
# slots run like separate kernels (scripts/test.sh sets 2: a kernel's 14 minutes in one boot left
# a slot idle at the end of CI's run). Every scenario already runs on a fresh boot after a FAIL,
# so none depends on another's having run before it.
shards=${OOMD_SD_SHARDS:-1}
[ "$shards" -ge 1 ] 2>/dev/null || shards=1
. "$TOP/tests/vm/shard.sh"
UNITS=''
unitvar() { echo "only_$(echo "$1" | tr '.-' '__')"; } # the variable holding a unit's scenarios
for k in $KERNELS; do
	i=1
	for line in $(shard_deal "$shards" "$HERE/costs" "" $SCENARIOS | tr ' ' ',' | sed 's/^$/-/'); do
		u=$k
		[ "$shards" = 1 ] || u=$k-s$i
		[ "$line" = - ] || { UNITS="$UNITS $u"; eval "$(unitvar "$u")=\$line"; }
		i=$((i + 1))
	done
done
say "kernels: $KERNELS; scenarios: $SCENARIOS; boots:$UNITS; logs in $OUT/serial-<kernel>[-s<shard>]-<boot>.log"
rm -f "$OUT"/serial-*.log "$OUT"/results-*.txt "$OUT"/notes-*.txt
par=${OOMD_SD_PARALLEL:-2}
[ "$par" -ge 1 ] 2>/dev/null || par=1
pids=''
for u in $UNITS; do
	while [ "$(for p in $pids; do kill -0 "$p" 2>/dev/null && echo x; done | wc -l)" -ge "$par" ]; do sleep 2; done
	eval "list=\$$(unitvar "$u")"
	# shellcheck disable=SC2046
	run_unit "$u" $(echo "$list" | tr ',' ' ') &
	pids="$pids $!"
done
for p in $pids; do wait "$p" || true; done
for k in $KERNELS; do # one results file a kernel, for the summary below
	[ "$shards" = 1 ] || cat "$OUT/results-$k"-s*.txt >"$OUT/results-$k.txt" 2>/dev/null || true
done

passed=0 failed=0 skipped=0
: >"$OUT/not-passed.txt" # every FAIL and SKIP line again, for scripts/test.sh's closing lines
for k in $KERNELS; do
	for s in $SCENARIOS; do
		line=$(awk -v k="$k" -v s="$s" '$1 == "RESULT" && $2 == k && $3 == s' "$OUT/results-$k.txt" 2>/dev/null | head -n 1)
		st=$(echo "$line" | awk '{print $4}')
		txt=$(echo "$line" | cut -d' ' -f5-)
		case $st in
		PASS) passed=$((passed + 1)) ;;
		SKIP) skipped=$((skipped + 1)) ;;
		FAIL) failed=$((failed + 1)) ;;
		*) st=FAIL txt="no result (see $OUT/serial-$k-*.log)"; failed=$((failed + 1)) ;;
		esac
		printf '%-4s %-4s %-16s %s\n' "$st" "$k" "$s" "$txt"
		[ "$st" = PASS ] || printf '%-4s %-4s %-16s %s\n' "$st" "$k" "$s" "$txt" >>"$OUT/not-passed.txt"
	done
done
cat "$OUT"/notes-*.txt 2>/dev/null || true
for f in "$OUT"/serial-*.log; do
	[ -f "$f" ] || continue
	b=$(tr -d '\r' <"$f" | sed -n 's/^OOMD-SD-BOOT \([^ ]*\) uptime=\([^ ]*\) .*/\1 \2/p' | head -n 1)
	[ -n "$b" ] && echo "run-sd: $(basename "$f" .log): up after ${b#* } (runner start)"
done
say "done"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
