#!/usr/bin/env python3
"""mkimage.py BUSYBOX OUTDIR NAME - the container images of the sd payload, without a registry.

Writes, from a static busybox:
  OUTDIR/rootfs.tar   a root file system (busybox and its applet links in /bin, /etc/passwd,
                      /etc/group, empty /dev /proc /sys /tmp /root): what `docker import` and
                      `podman import` take
  OUTDIR/busybox.tar  the same as one image, in both archive layouts at once (what `docker save`
                      writes since Docker 25): manifest.json (docker-archive: `docker load` of
                      Docker 20.10, `podman load`) and oci-layout, index.json, blobs/ (OCI image
                      layout: `ctr images import`), named NAME (e.g. localhost/oomd-busybox:latest)
Deterministic: every entry owned by 0:0 with mtime 0, so the digests only change with busybox.
"""
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile


def add_bytes(tar, name, data, mode=0o644):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    info.mtime = 0
    tar.addfile(info, io.BytesIO(data))


def add_dir(tar, name, mode=0o755):
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    info.mode = mode
    info.mtime = 0
    tar.addfile(info)


def rootfs(busybox):
    applets = subprocess.run([busybox, "--list"], check=True, capture_output=True,
                             text=True).stdout.split()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for d in ("bin", "dev", "etc", "proc", "sys", "root", "run", "var"):
            add_dir(tar, d)
        add_dir(tar, "tmp", 0o1777)
        with open(busybox, "rb") as f:
            add_bytes(tar, "bin/busybox", f.read(), 0o755)
        for a in sorted(set(applets)):
            if a == "busybox":
                continue
            info = tarfile.TarInfo("bin/" + a)
            info.type = tarfile.SYMTYPE
            info.linkname = "busybox"
            info.mode = 0o777
            info.mtime = 0
            tar.addfile(info)
        add_bytes(tar, "etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n"
                  b"nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")
        add_bytes(tar, "etc/group", b"root:x:0:\nnogroup:x:65534:\n")
    return buf.getvalue()


def sha(data):
    return hashlib.sha256(data).hexdigest()


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: mkimage.py BUSYBOX OUTDIR NAME")
    busybox, out, name = sys.argv[1:]
    os.makedirs(out, exist_ok=True)
    layer = rootfs(busybox)
    with open(os.path.join(out, "rootfs.tar"), "wb") as f:
        f.write(layer)
    config = json.dumps({
        "architecture": "amd64", "os": "linux", "created": "1970-01-01T00:00:00Z",
        "config": {"Cmd": ["/bin/sh"], "Env": ["PATH=/bin"]},
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + sha(layer)]},
        "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "oomdelayfs tests/sd/mkimage.py"}],
    }, sort_keys=True).encode()
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": "sha256:" + sha(config), "size": len(config)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                    "digest": "sha256:" + sha(layer), "size": len(layer)}],
    }, sort_keys=True).encode()
    tag = name.rsplit(":", 1)[1] if ":" in name.rsplit("/", 1)[-1] else "latest"
    index = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                       "digest": "sha256:" + sha(manifest), "size": len(manifest),
                       "annotations": {"io.containerd.image.name": name,
                                       "org.opencontainers.image.ref.name": tag}}],
    }, sort_keys=True).encode()
    docker = json.dumps([{"Config": "blobs/sha256/" + sha(config), "RepoTags": [name],
                          "Layers": ["blobs/sha256/" + sha(layer)]}]).encode()
    with tarfile.open(os.path.join(out, "busybox.tar"), "w", format=tarfile.GNU_FORMAT) as tar:
        add_dir(tar, "blobs")
        add_dir(tar, "blobs/sha256")
        for blob in (layer, config, manifest):
            add_bytes(tar, "blobs/sha256/" + sha(blob), blob)
        add_bytes(tar, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        add_bytes(tar, "index.json", index)
        add_bytes(tar, "manifest.json", docker)
        add_bytes(tar, "repositories", json.dumps(
            {name.rsplit(":", 1)[0]: {tag: sha(config)}}).encode())


main()
