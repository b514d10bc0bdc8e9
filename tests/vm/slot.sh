# slot.sh - sourced by run-vm.sh and tests/sd/run-sd.sh: host-wide slots for VMs.
# The host has two cores; each TCG VM needs one to keep the scenarios' timing honest. scripts/test.sh
# runs the VM suite (tests/vm) and the real-systemd suite (tests/sd) side by side, so neither
# suite's own parallelism can bound the total: every VM boot takes a slot first.
#
# vm_slot CMD...: runs CMD while holding one of OOMD_VM_SLOTS (default 2) slots, the flock(1) locks
# /run/lock/oomdelayfs-vm-slot.N, waiting (polling every 2 s) for a free one; returns CMD's exit
# status. A CMD that itself exits 200 (flock's conflict code here) is not told from a busy slot:
# the VM commands this wraps (timeout + qemu) exit 0-143.
vm_slot() {
	_vs_n=${OOMD_VM_SLOTS:-2}
	while :; do
		_vs_i=0
		while [ "$_vs_i" -lt "$_vs_n" ]; do
			_vs_rc=0
			flock -n -E 200 "/run/lock/oomdelayfs-vm-slot.$_vs_i" "$@" || _vs_rc=$?
			[ "$_vs_rc" = 200 ] || return "$_vs_rc"
			_vs_i=$((_vs_i + 1))
		done
		sleep 2
	done
}
