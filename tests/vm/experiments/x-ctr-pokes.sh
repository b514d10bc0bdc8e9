# x-ctr-pokes: an experiment, not part of the suite. Does a container runtime make the kernel
# rewrite its own code while both vCPUs run? (/init switches the static keys it knows of on one
# CPU first: under TCG a vCPU can run a stale translation of code the other one rewrites; CI
# saw 7.3.4 panic in the slab allocator, refill_objects, under runc's write of
# cgroup.subtree_control with +cpuset, 2026-12-07.) Runs c-runc's body with a kprobe on x86's
# jump-label patching (one hit per patched site) and prints, beside c-runc's result, how many
# sites were patched and the function that asked (the kernel stack's first non-jump-label frame).
# Seen on 2026-12-07, 7.3.4: before /init enabled +cpuset in the root, the first container
# panicked the guest (Oops: int3 in __alloc_frozen_pages_noprof, runc init faulting a page in);
# with it, 21 sites (cgroup_bpf_release x8, __cgroup_bpf_attach x8: runc's device programs; and
# tracepoint_probe_unregister x5: the probe's own removal, at the end); with cgkeep as well, 5
# on 7 and 4 on 6.1, all the probe's own.
#   cp tests/vm/experiments/x-ctr-pokes.sh tests/vm/scenarios/
#   tests/vm/run-vm.sh --build-dir build --kernel 7 --scenario x-ctr-pokes
#   rm tests/vm/scenarios/x-ctr-pokes.sh
# timeout: 240
# image: containers
. /oomd/lib.sh
TRC=/sys/kernel/tracing
[ -d $TRC/events ] || mount -t tracefs nodev $TRC 2>/dev/null || skip "no tracefs"
fn=
for f in arch_jump_label_transform_queue arch_jump_label_transform; do
	grep -qx "$f" $TRC/available_filter_functions 2>/dev/null && { fn=$f; break; }
done
[ -n "$fn" ] || skip "no x86 jump-label patching function to probe"
echo "p:pk $fn" >$TRC/kprobe_events || skip "cannot add a kprobe on $fn"
echo 1 >$TRC/options/stacktrace
echo 1 >$TRC/events/kprobes/pk/enable
_pokes() {
	echo 0 >$TRC/events/kprobes/pk/enable
	n=$(grep -c ' pk: ' $TRC/trace)
	# the first frame of each stack that is not jump-label machinery names the key's user
	who=$(awk '/ pk: /{s=1; next} s && /=>/ { f=$2; if (f ~ /jump_label|static_key|arch_|text_poke|cpus_read|__static/) next; print f; s=0 }' $TRC/trace |
		sort | uniq -c | sort -rn | awk '{printf "%s%s x%s", sep, $2, $1; sep=", "}')
	echo "$n sites patched ($fn) by: ${who:-none}"
}
pass() { _result "PASS pokes: $(_pokes); c-runc: $*"; }
fail() { _result "FAIL pokes: $(_pokes); c-runc: $*"; }
RT=runc
. /oomd/containers.sh
