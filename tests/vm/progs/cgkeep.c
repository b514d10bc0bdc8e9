/* cgkeep - holds a static key of the kernel on for the VM's whole run, so that it is never
 * rewritten while two vCPUs run (tests/vm/init says why: under TCG a vCPU can run a stale
 * translation of code the other one patches).
 *
 *   cgkeep CGROUP_DIR
 *       attaches an allow-all cgroup device program (BPF_PROG_TYPE_CGROUP_DEVICE, the kind
 *       runc and crun attach to every container's cgroup) to CGROUP_DIR and exits; the
 *       attachment, and with it cgroup_bpf_enabled_key[CGROUP_DEVICE], lasts as long as the
 *       cgroup. A runtime's own attach and release then only count (x-ctr-pokes: without it
 *       c-runc's containers patched 8 sites in their attaches and 8 in their releases, in
 *       all).
 * Exit status: 0 attached; 1 with a message naming the step and errno.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static long bpf(int cmd, union bpf_attr *a)
{
	return syscall(SYS_bpf, cmd, a, sizeof *a);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: cgkeep CGROUP_DIR\n");
		return 1;
	}
	/* r0 = 1 (allow); exit */
	struct bpf_insn prog[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 1 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	union bpf_attr a;
	memset(&a, 0, sizeof a);
	a.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
	a.insns = (unsigned long)prog;
	a.insn_cnt = sizeof prog / sizeof prog[0];
	a.license = (unsigned long)"GPL";
	int pfd = (int)bpf(BPF_PROG_LOAD, &a);
	if (pfd < 0) {
		fprintf(stderr, "cgkeep: loading the device program: %s\n", strerror(errno));
		return 1;
	}
	int cfd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cfd < 0) {
		fprintf(stderr, "cgkeep: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	memset(&a, 0, sizeof a);
	a.target_fd = (unsigned)cfd;
	a.attach_bpf_fd = (unsigned)pfd;
	a.attach_type = BPF_CGROUP_DEVICE;
	a.attach_flags = BPF_F_ALLOW_MULTI;
	if (bpf(BPF_PROG_ATTACH, &a) < 0) {
		fprintf(stderr, "cgkeep: attaching the device program to %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	return 0;
}
