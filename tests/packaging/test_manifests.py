#!/usr/bin/env python3
"""The container packaging checked against what the daemon and the hook rely on.

usage: test_manifests.py SRCROOT OOMDELAYFS_BINARY   (meson test --suite unit)

No cluster runs here: this parses packaging/kubernetes/*.yaml with python3-yaml (Debian's
archive), packaging/oci/oomdelayfs.json, the CRI-O drop-in and the systemd unit, and checks
that they agree with each other, with the annotation names of oci/ocispec.h and with the
daemon's own --help.
"""
import json
import os
import re
import subprocess
import sys
import tomllib
import unittest

try:
    import yaml
except ImportError:  # meson counts 77 as a skip, never as a pass
    print("python3-yaml is not installed (apt-get install python3-yaml)")
    sys.exit(77)

SRC = sys.argv[1] if len(sys.argv) > 1 else os.getcwd()
DAEMON = sys.argv[2] if len(sys.argv) > 2 else None
del sys.argv[1:]


def read(rel):
    with open(os.path.join(SRC, rel), encoding="utf-8") as f:
        return f.read()


def annotation_names():
    """The annotation names the hook and the shim read (oci/ocispec.h)."""
    names = dict(re.findall(r'#define OCISPEC_ANN_(\w+) "([^"]+)"', read("oci/ocispec.h")))
    assert set(names) == {"DELAY", "DISABLE", "MOUNT"}, names
    return names


def hook_default_shadow():
    m = re.search(r'opt_shadow \? opt_shadow : "([^"]+)"', read("oci/oomdelayfs-oci-hook.c"))
    assert m, "no default --shadow in oomdelayfs-oci-hook.c"
    return m.group(1)


def shadow_arg(args):
    i = args.index("--shadow")
    return args[i + 1]


class Manifests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        docs = [d for d in yaml.safe_load_all(read("packaging/kubernetes/oomdelayfs.yaml")) if d]
        cls.by_kind = {}
        for d in docs:
            cls.by_kind.setdefault(d["kind"], []).append(d)
        cls.ds = cls.by_kind["DaemonSet"][0]
        cls.pod = cls.ds["spec"]["template"]["spec"]
        cls.daemon = next(c for c in cls.pod["containers"] if c["name"] == "oomdelayfs")
        cls.volumes = {v["name"]: v for v in cls.pod["volumes"]}
        cm = cls.by_kind["ConfigMap"][0]
        cls.k8s_hook = json.loads(cm["data"]["oomdelayfs.json"])
        cls.host_hook = json.loads(read("packaging/oci/oomdelayfs.json"))
        cls.names = annotation_names()

    def host_path_of(self, container, mount_path):
        """(hostPath, mountPropagation) of the volume mounted at mount_path."""
        for m in container.get("volumeMounts", []):
            if m["mountPath"] == mount_path:
                vol = self.volumes[m["name"]]
                self.assertIn("hostPath", vol, f"{mount_path} is not a hostPath volume")
                return vol["hostPath"]["path"], m.get("mountPropagation", "None")
        self.fail(f"{container['name']} mounts nothing at {mount_path}")

    def test_namespace_and_selector(self):
        ns = self.by_kind["Namespace"][0]["metadata"]["name"]
        self.assertEqual(self.ds["metadata"]["namespace"], ns)
        self.assertEqual(self.by_kind["ConfigMap"][0]["metadata"]["namespace"], ns)
        labels = self.ds["spec"]["template"]["metadata"]["labels"]
        for k, v in self.ds["spec"]["selector"]["matchLabels"].items():
            self.assertEqual(labels.get(k), v)

    def test_host_pid_and_privileged(self):
        # FUSE requests carry pids of the mounter's pid namespace: the host's, for
        # cgroup.procs translation and the listeners' pidfd_getfd
        self.assertIs(self.pod.get("hostPID"), True)
        # FUSE mount, knob writes, SCHED_FIFO; and Kubernetes allows Bidirectional only here
        self.assertIs(self.daemon["securityContext"].get("privileged"), True)

    def test_cgroup_and_run_mounts_bidirectional(self):
        self.assertEqual(self.host_path_of(self.daemon, "/sys/fs/cgroup"),
                         ("/sys/fs/cgroup", "Bidirectional"))
        self.assertEqual(self.host_path_of(self.daemon, "/run/oomdelayfs"),
                         ("/run/oomdelayfs", "Bidirectional"))
        self.assertEqual(self.host_path_of(self.daemon, "/dev/fuse")[0], "/dev/fuse")

    def test_daemon_serves_where_the_hook_looks(self):
        cmd = self.daemon["command"] + self.daemon.get("args", [])
        self.assertTrue(cmd[0].endswith("/oomdelayfs"), cmd)
        mountpoint = cmd[-1]
        # the shadow is mounted inside the Bidirectional /run/oomdelayfs, so the node sees it
        self.assertTrue(mountpoint.startswith("/run/oomdelayfs/"), mountpoint)
        self.assertEqual(cmd[cmd.index("--cgroup-root") + 1], "/sys/fs/cgroup")
        self.assertEqual(shadow_arg(self.k8s_hook["hook"]["args"]), mountpoint)
        self.assertEqual(shadow_arg(self.host_hook["hook"]["args"]), mountpoint)
        self.assertEqual(hook_default_shadow(), mountpoint)
        unit = read("packaging/oomdelayfs.service")
        start = re.search(r"^ExecStart=(.*)$", unit, re.M).group(1).split()
        # the unit passes no option (issue 19: the configuration file's keys win); the
        # daemon's default mount point is where it mounts then
        unit_mnt = start[-1] if len(start) > 1 else re.search(
            r'#define OD_MOUNTPOINT_DEFAULT "([^"]*)"', read("include/oomd/options.h")).group(1)
        self.assertEqual(unit_mnt, mountpoint, "the systemd unit mounts elsewhere")

    def test_daemon_options_exist(self):
        if DAEMON is None:
            self.skipTest("no daemon binary given")
        out = subprocess.run([DAEMON, "--help"], capture_output=True, text=True, check=True).stdout
        used = [a for a in self.daemon["command"] if a.startswith("--")]
        used += [a for a in self.daemon["lifecycle"]["preStop"]["exec"]["command"] if a.startswith("--")]
        for opt in used:
            self.assertRegex(out, r"\s" + re.escape(opt) + r"[=\s]", f"oomdelayfs has no {opt}")

    def test_hooks_ask_for_the_annotations(self):
        for hook in (self.k8s_hook, self.host_hook):
            self.assertEqual(hook["version"], "1.0.0")
            # the stage the hook is written for: the runtime's namespaces, cgroup joined,
            # mounts made, before pivot_root (oomdelayfs-oci-hook.c)
            self.assertEqual(hook["stages"], ["createRuntime"])
            self.assertNotIn("always", hook["when"])
            (key_re, val_re), = hook["when"]["annotations"].items()
            # the two that ask trigger the hook; the mount opt-out alone asks for nothing
            for key in ("DELAY", "DISABLE"):
                self.assertRegex(self.names[key], key_re)
            self.assertIsNone(re.search(key_re, self.names["MOUNT"]))
            for other in ("org.oomdelayfs.other", "xorg.oomdelayfs.oom_delay_millisecs",
                          "org.oomdelayfs.oom_delay_millisecs.x", "run.oci.keep_original_groups"):
                self.assertIsNone(re.search(key_re, other), other)
            self.assertRegex("2000", val_re)
            self.assertIsNone(re.search(val_re, ""), "an empty annotation must not match")
            self.assertLessEqual(hook["hook"]["timeout"], 30)
            self.assertEqual(os.path.basename(hook["hook"]["args"][0]),
                             os.path.basename(hook["hook"]["path"]))

    def test_maintainer_scripts_reach_only_roots_paths(self):
        # Round three (issue 21): the scripts run as root at install, upgrade and removal; a
        # path a local user could create or replace first (/tmp, /var/tmp, /dev/shm, a home) or a
        # recursive removal (that walks into a mount a dead daemon left) would be a way in.
        allowed = ("/run/oomdelayfs", "/run/systemd/system")
        for name in ("preinst", "postinst", "prerm", "postrm"):
            path = os.path.join(SRC, "packaging/debian", name)
            if not os.path.exists(path):
                continue
            code = "\n".join(l.split("#", 1)[0] for l in read("packaging/debian/" + name).splitlines())
            self.assertNotRegex(code, r"\brm\s+-[a-zA-Z]*[rR]", name + ": recursive removal")
            self.assertNotRegex(code, r"\b(chown|chmod|chgrp|ln|mktemp|tee)\b", name + ": changes a path's owner, mode or link")
            for p in re.findall(r"(?<![\w$])/[\w./-]+", code):
                if p in ("/dev/null",):
                    continue
                self.assertTrue(p.startswith(allowed), "%s names %s, outside %s" % (name, p, allowed))

    def test_host_hook_path_is_the_installed_one(self):
        build = read("oci/meson.build")
        self.assertIn("get_option('libexecdir') / 'oomdelayfs'", build)
        self.assertEqual(self.host_hook["hook"]["path"], "/usr/libexec/oomdelayfs/oomdelayfs-oci-hook")

    def test_node_hook_is_installed_where_it_is_started(self):
        args = self.k8s_hook["hook"]["args"]
        self.assertEqual(self.k8s_hook["hook"]["path"], "/opt/oomdelayfs/lib/ld-linux-x86-64.so.2")
        self.assertEqual(args[1:3], ["--library-path", "/opt/oomdelayfs/lib"])
        self.assertEqual(args[3], "/opt/oomdelayfs/bin/oomdelayfs-oci-hook")
        init = next(c for c in self.pod["initContainers"] if c["name"] == "install-hook")
        opt_host, _ = self.host_path_of(init, "/host/opt/oomdelayfs")
        self.assertEqual(opt_host, "/opt/oomdelayfs")
        hooks_host, _ = self.host_path_of(init, "/host/etc/containers/oci/hooks.d")
        script = " ".join(init["args"])
        self.assertIn("/host/etc/containers/oci/hooks.d/oomdelayfs.json", script)
        self.assertIn("cp -a /opt/oomdelayfs/. /host/opt/oomdelayfs/", script)
        cf = read("packaging/kubernetes/Containerfile")
        self.assertIn("/opt/oomdelayfs/bin/", cf)
        self.assertIn("COPY --from=build /opt/oomdelayfs /opt/oomdelayfs", cf)
        crio = tomllib.loads(read("packaging/kubernetes/crio-hooks.conf"))
        self.assertIn(hooks_host, crio["crio"]["runtime"]["hooks_dir"])
        # the ConfigMap is mounted where the init container copies it from
        cm_mount = next(m for m in init["volumeMounts"] if m["name"] == "hook-config")
        self.assertIn(cm_mount["mountPath"] + "/oomdelayfs.json", script)
        self.assertEqual(self.volumes["hook-config"]["configMap"]["name"],
                         self.by_kind["ConfigMap"][0]["metadata"]["name"])


class Engines(unittest.TestCase):
    """The files an operator copies for containerd (CRI), podman and the shim's runtime.conf."""

    def test_runtimeclass_names_the_containerd_handler(self):
        rc = yaml.safe_load(read("packaging/kubernetes/runtimeclass.yaml"))
        self.assertEqual(rc["kind"], "RuntimeClass")
        cri = tomllib.loads(read("packaging/kubernetes/containerd-cri.toml"))
        runtimes = cri["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]
        self.assertIn(rc["handler"], runtimes)
        h = runtimes[rc["handler"]]
        self.assertEqual(h["runtime_type"], "io.containerd.runc.v2")
        self.assertEqual(h["options"]["BinaryName"], "/usr/bin/oomdelayfs-runtime")
        # the pod's annotations reach the config.json the shim and the hook read
        for name in annotation_names().values():
            self.assertTrue(any(re.fullmatch(p.replace(".", r"\.").replace("*", ".*"), name)
                                for p in h["pod_annotations"]), name)

    def test_snippet_appends_to_debians_config(self):
        # Debian 12's /etc/containerd/config.toml (containerd 1.6.20~ds1-1+deb12u3)
        debian = (
            'version = 2\n\n[plugins]\n  [plugins."io.containerd.grpc.v1.cri"]\n'
            '    [plugins."io.containerd.grpc.v1.cri".cni]\n      bin_dir = "/usr/lib/cni"\n'
            '      conf_dir = "/etc/cni/net.d"\n  [plugins."io.containerd.internal.v1.opt"]\n'
            '    path = "/var/lib/containerd/opt"\n')
        both = tomllib.loads(debian + read("packaging/kubernetes/containerd-cri.toml"))
        self.assertEqual(both["version"], 2)
        cri = both["plugins"]["io.containerd.grpc.v1.cri"]
        self.assertEqual(cri["cni"]["bin_dir"], "/usr/lib/cni")
        self.assertIn("oomdelayfs", cri["containerd"]["runtimes"])
        # containerd's default_runtime_name is "runc": a runtimes map without it makes the CRI
        # plugin refuse to load (e-containerd saw it with 1.6.20)
        self.assertEqual(cri["containerd"]["runtimes"]["runc"]["runtime_type"], "io.containerd.runc.v2")

    def test_podman_dropin_names_the_shim_as_crun(self):
        conf = tomllib.loads(read("packaging/oci/podman-oomdelayfs.conf"))
        self.assertEqual(conf["engine"]["runtimes"]["crun"], ["/usr/libexec/oomdelayfs/crun"])
        self.assertIn("install_symlink('crun'", read("oci/meson.build"))

    def test_runtime_conf_names_debians_runtimes(self):
        import configparser
        path = os.path.join(SRC, "packaging/runtime.conf")
        if not os.path.exists(path):
            self.skipTest("packaging/runtime.conf is not in this tree")
        c = configparser.ConfigParser(interpolation=None)
        c.read_string(read("packaging/runtime.conf"))
        self.assertEqual(c["runtime"]["path"], "/usr/sbin/runc")  # Debian 12's runc package
        # the shim's defaults where the file is silent: crun= the next crun in PATH (podman's,
        # /usr/bin/crun), [docker] data-root=/var/lib/docker
        self.assertIn(c["runtime"].get("crun", "/usr/bin/crun"), ("/usr/bin/crun",))
        if c.has_section("docker"):
            self.assertEqual(c["docker"]["data-root"], "/var/lib/docker")


class Unit(unittest.TestCase):
    """The systemd unit's least privilege (issue 21, deliverable 5)."""

    def setUp(self):
        self.unit = read("packaging/oomdelayfs.service")

    def directives(self):
        return {m.group(1) for m in re.finditer(r"^([A-Za-z]+)=", self.unit, re.M)}

    def test_capabilities_are_the_ones_s_caps_proves(self):
        caps = re.search(r"^CapabilityBoundingSet=(.*)$", self.unit, re.M).group(1).split()
        scen = read("tests/vm/scenarios/s-caps.sh")
        tried = re.search(r"^CAPS=(\S+)$", scen, re.M).group(1).split(",")
        self.assertEqual(sorted(c.lower().removeprefix("cap_") for c in caps), sorted(tried))

    def test_no_mount_namespace_and_nothing_that_breaks_the_mount(self):
        # each would hide the FUSE mount in a namespace of the service's own, make
        # /sys/fs/cgroup read-only, or refuse clone3, setns, SCHED_FIFO or a setgid mode
        forbidden = {"PrivateTmp", "ProtectSystem", "ProtectHome", "ReadWritePaths",
                     "ReadOnlyPaths", "InaccessiblePaths", "PrivateDevices", "ProtectKernelTunables",
                     "ProtectKernelModules", "ProtectKernelLogs", "ProtectControlGroups",
                     "ProtectProc", "ProcSubset", "TemporaryFileSystem", "PrivateMounts",
                     "PrivateIPC", "BindPaths", "BindReadOnlyPaths", "RestrictNamespaces",
                     "RestrictRealtime", "RestrictSUIDSGID", "RuntimeDirectory", "PrivateNetwork",
                     "PrivateUsers", "MountFlags", "RootDirectory", "RootImage", "User",
                     "DynamicUser", "UMask"}
        self.assertEqual(self.directives() & forbidden, set())

    def value(self, key):
        m = re.search(rf"^{key}=(.*)$", self.unit, re.M)
        return m.group(1).split() if m else None

    def test_devices_closed_but_fuse(self):
        # ProtectClock= adds a DeviceAllow= (char-rtc), which closes every device not listed
        self.assertEqual(self.value("DevicePolicy"), ["closed"])
        self.assertEqual(self.value("DeviceAllow"), ["/dev/fuse", "rw"])

    def test_syscall_filter_denies_only_unused_groups(self):
        # a deny list, answering EPERM; no group holding a call the daemon makes (@debug:
        # pidfd_getfd, @mount, @privileged: setfsuid/open_by_handle_at/capset, @resources:
        # setrlimit/sched_setscheduler, @process: clone3/setns/pidfd_open, ...)
        f = self.value("SystemCallFilter")
        self.assertTrue(f[0].startswith("~"), f)
        names = [f[0][1:]] + f[1:]
        unused = {"@clock", "@cpu-emulation", "@module", "@obsolete", "@raw-io", "@reboot", "@swap"}
        self.assertEqual({n for n in names if n.startswith("@")} - unused, set())
        used = {"pidfd_getfd", "pidfd_open", "pidfd_send_signal", "clone3", "setns", "mount",
                "umount2", "setfsuid", "setfsgid", "capset", "open_by_handle_at",
                "name_to_handle_at", "setrlimit", "prlimit64", "sched_setscheduler",
                "setpriority", "mlockall", "memfd_create", "fchownat", "mknodat"}
        self.assertEqual(set(names) & used, set())
        self.assertEqual(self.value("SystemCallErrorNumber"), ["EPERM"])

    def test_address_families(self):
        # AF_UNIX: notify, journal, D-Bus, status socket; AF_INET: the 127.0.0.1 metrics port
        self.assertEqual(sorted(self.value("RestrictAddressFamilies")), ["AF_INET", "AF_UNIX"])
        self.assertEqual(self.value("IPAddressDeny"), ["any"])
        self.assertEqual(self.value("IPAddressAllow"), ["localhost"])

    def test_memlock_without_ipc_lock(self):
        # no CAP_IPC_LOCK: mlockall needs the unlimited RLIMIT_MEMLOCK then
        self.assertNotIn("CAP_IPC_LOCK", self.value("CapabilityBoundingSet"))
        self.assertEqual(self.value("LimitMEMLOCK"), ["infinity"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
