"""Distributed filesystems with servers of their own: MooseFS and GlusterFS, one fresh volume per `lab up`, read and
written through two FUSE clients (the target's path and a second client's, `clients` in its record).

Everything a volume has lives in the lab directory under shared/NAME: configurations, metadata, logs, the loop
images its chunk servers or bricks store on, and the mounts of those images. What the servers would write elsewhere
is kept there too:
- MooseFS: the master and both chunk servers run in a network namespace of their own (`iolens-LABID`), joined to
  this one by a veth pair with a private /30 of its own, because a chunk server refuses a master on a 127.x
  address; the clients on this side reach the master through it. `down` deletes the pair and the namespace.
- GlusterFS: glusterd runs in a mount namespace of its own, in which /var/lib/glusterd, /var/log/glusterfs and
  /var/run/gluster are the lab's directories (its bricks and self-heal daemon, which it starts there, write there
  too); its CLI runs in the same namespace. glusterd listens on 127.0.0.1:24007, the port its bricks ask, so one
  GlusterFS lab runs on a machine at a time.

`down` unmounts the clients, stops every process of the volume (those recorded, and any other whose command line
names its directory: the bricks glusterd forks), unmounts and detaches the images, removes the namespace and the
directory; it works the same after any of the servers was killed.
"""

from __future__ import annotations

import ipaddress
import os
import shlex
import shutil
import socket
import time
from xml.etree import ElementTree
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from iolens.lab import tools
from iolens.sysinfo import mounts
from iolens.lab.state import lab_id, process_alive, process_start_time
from iolens.lab.sysops import (
    StepFailed,
    addresses_in_use,
    detach_loop,
    link_exists,
    log_tail,
    loop_filesystem,
    loops_backed_by,
    make_netns,
    mount_at,
    mounts_under,
    netns_path,
    pids_mentioning,
    remove_netns,
    responsive,
    run,
    stop_process,
    unmount,
    wait_port,
)

if TYPE_CHECKING:
    from iolens.lab.catalog import Target
    from iolens.lab.up import Up

CLIENTS = 2  # FUSE clients of each volume: the target's path, then "NAME-client2"
MIN_IMAGE = 300 << 20  # each chunk server's or brick's image (XFS needs 300 MiB)
MFS_NEEDS = ("ip", "nsenter", "mfsmaster", "mfschunkserver", "mfsmount", "mfssetgoal", "mfssettrashtime", "losetup",
             "mkfs.ext4", "fusermount3")
GLUSTER_NEEDS = ("unshare", "nsenter", "glusterd", "gluster", "glusterfs", "losetup", "mkfs.xfs", "fusermount3")
MFS_MASTER_PORTS = (9419, 9420, 9421)  # metaloggers, chunk servers, clients (inside the namespace)
MFS_CS_PORTS = (9422, 9423)
MFS_GOAL = 2
NET_POOL = ipaddress.IPv4Network("10.250.0.0/16")  # the veth pair's /30 is picked from here, clear of every address
GLUSTERD_PORT = 24007
GLUSTER_VOLUME = "iolens"
GLUSTER_DIRS = ("/var/lib/glusterd", "/var/log/glusterfs", "/var/run/gluster")  # seen as the lab's by glusterd
SYSTEM_PATHS = ("/usr", "/etc", "/lib", "/lib64", "/bin", "/sbin", "/run", "/proc", "/sys", "/dev", "/dev/shm",
                "/dev/pts", "/tmp", "/var/tmp")
PROBE = ".iolens-probe"
CLIENT_PROGRAMS = ("mfsmount-", "glusterfs-")  # the clients' process keys (`glusterfs-1:gluster`)


def state_dir(root: Path, name: str) -> Path:
    return root / "shared" / name


def client_paths(root: Path, name: str) -> list[Path]:
    """Where the clients mount the volume: the target's own path first."""
    return [root / "mnt" / (name if i == 1 else f"{name}-client{i}") for i in range(1, CLIENTS + 1)]


def _need(names: tuple[str, ...]) -> None:
    for name in names:
        if tools.find(name) is None:
            raise StepFailed(f"{name} is not installed", tools.install_hint(name))


def _fresh(job: Up, target: Target) -> Path:
    d = state_dir(job.root, target.name)
    if d.exists():  # left by an earlier bring-up: a volume is always new
        stop(job.root, job.state, target.name, netns=target.kind == "moosefs")
    d.mkdir(parents=True)
    if job.settings.size < MIN_IMAGE:
        raise StepFailed(f"lab:{target.name} needs images of at least {MIN_IMAGE >> 20} MiB",
                         f"use --size {MIN_IMAGE >> 20}M or more")
    return d


def _clients(job: Up, target: Target, argv_for: Callable[[int, Path], list[str]]) -> list[Path]:
    """Mount every client (argv_for(i, mnt) is client i's command), then check that each sees the others' writes."""
    paths = client_paths(job.root, target.name)
    for i, mnt in enumerate(paths, 1):
        mnt.mkdir(parents=True, exist_ok=True)
        argv = argv_for(i, mnt)
        job.fuse(target, mnt, argv, key=f"{Path(argv[0]).name}-{i}:{target.name}")
    os.chmod(paths[0], 0o1777)
    _probe(paths)
    return paths


def _probe(paths: list[Path]) -> None:
    """Client 1 writes, every other client reads the same bytes back, then deletes."""
    data = os.urandom(4096)
    first = paths[0] / PROBE
    with open(first, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    try:
        for other in paths[1:]:
            deadline = time.monotonic() + 10
            while True:
                try:
                    if (other / PROBE).read_bytes() == data:
                        break
                except OSError:
                    pass
                if time.monotonic() > deadline:
                    raise StepFailed(f"{other} does not see what {paths[0]} wrote")
                time.sleep(0.1)
    finally:
        first.unlink()


# -- MooseFS ------------------------------------------------------------------------------------------------------

def _net(root: Path) -> dict[str, Any]:
    """The namespace, the veth pair's names and a free private /30 for this lab (the same names every time)."""
    lid = lab_id(root)
    return {"netns": f"iolens-{lid}", "host_if": f"io{lid}h", "ns_if": f"io{lid}n", "prefix": 30}


def _free_pair(root: Path) -> tuple[str, str]:
    used = addresses_in_use()
    subnets = list(NET_POOL.subnets(new_prefix=30))
    start = int(lab_id(root), 16) % len(subnets)
    for k in range(len(subnets)):
        host, ns = list(subnets[(start + k) % len(subnets)].hosts())
        if str(host) not in used and str(ns) not in used:
            return str(host), str(ns)
    raise StepFailed(f"no free /30 left in {NET_POOL} for the MooseFS servers' network namespace")


def start_moosefs(job: Up, target: Target, info: dict[str, Any]) -> None:
    """Master and two chunk servers (goal 2, each on its own ext4 image) in a network namespace, two mfsmount."""
    _need(MFS_NEEDS)
    d = _fresh(job, target)
    net = _net(job.root)
    host, ns = _free_pair(job.root)
    net.update(host_addr=host, ns_addr=ns)
    job.state["targets"][target.name]["net"] = net  # recorded before it exists, so `down` removes it
    job.save()
    make_netns(net["netns"], net["host_if"], net["ns_if"], host, ns, net["prefix"])
    nsenter = ["nsenter", f"--net={netns_path(net['netns'])}"]
    size = job.settings.size
    common = "WORKING_USER = root\nWORKING_GROUP = root\nSYSLOG_IDENT = iolens-mfs\n"

    (d / "master").mkdir()
    shutil.copy(_mfs_empty_metadata(), d / "master" / "metadata.mfs")
    (d / "exports.cfg").write_text(f"{host} / rw,alldirs,admin,maproot=0:0\n{host} . rw\n")
    (d / "topology.cfg").write_text("")
    (d / "master.cfg").write_text(
        common + f"DATA_PATH = {d / 'master'}\nEXPORTS_FILENAME = {d / 'exports.cfg'}\n"
        f"TOPOLOGY_FILENAME = {d / 'topology.cfg'}\n"
        + "".join(f"{k}_LISTEN_HOST = {ns}\n{k}_LISTEN_PORT = {p}\n"
                  for k, p in zip(("MATOML", "MATOCS", "MATOCL"), MFS_MASTER_PORTS)))
    proc, log = job.spawn(f"mfsmaster:{target.name}",
                          [*nsenter, tools.find("mfsmaster") or "mfsmaster", "-f", "-c", str(d / "master.cfg")])
    wait_port(MFS_MASTER_PORTS[2], proc, log, host=ns)

    servers = [{"name": "mfsmaster", "address": f"{ns}:{MFS_MASTER_PORTS[2]}",
                "ports": list(MFS_MASTER_PORTS), "netns": net["netns"]}]
    for i, port in enumerate(MFS_CS_PORTS, 1):
        store = d / f"cs{i}"
        loop_filesystem(d / f"cs{i}.img", size, "ext4", store, job.record)
        (store / "chunks").mkdir()
        (d / f"cs{i}-data").mkdir()
        (d / f"hdd{i}.cfg").write_text(f"{store / 'chunks'}\n")
        (d / f"cs{i}.cfg").write_text(
            common + f"DATA_PATH = {d / f'cs{i}-data'}\nHDD_CONF_FILENAME = {d / f'hdd{i}.cfg'}\n"
            f"MASTER_HOST = {ns}\nMASTER_PORT = {MFS_MASTER_PORTS[1]}\nBIND_HOST = {ns}\n"
            f"CSSERV_LISTEN_HOST = {ns}\nCSSERV_LISTEN_PORT = {port}\nHDD_LEAVE_SPACE_DEFAULT = 4MiB\n")
        proc, log = job.spawn(f"mfschunkserver-{i}:{target.name}",
                              [*nsenter, tools.find("mfschunkserver") or "mfschunkserver", "-f", "-c",
                               str(d / f"cs{i}.cfg")])
        wait_port(port, proc, log, host=ns)
        servers.append({"name": f"mfschunkserver {i}", "address": f"{ns}:{port}", "ports": [port],
                        "netns": net["netns"], "storage": f"ext4 on a {size >> 20} MiB loop image"})
    _wait_registered(job.root / "logs" / f"mfsmaster-{target.name}.log", len(MFS_CS_PORTS))

    paths = _clients(job, target, lambda i, mnt: [
        "mfsmount", "-f", "-H", ns, "-P", str(MFS_MASTER_PORTS[2]), "-o", "mfsioretries=10,subtype=mfs", str(mnt)])
    run(["mfssetgoal", "-r", str(MFS_GOAL), str(paths[0])])
    run(["mfssettrashtime", "-r", "0", str(paths[0])])  # deleted files go at once (while no client holds them)
    info.update(path=str(paths[0]), clients=[str(p) for p in paths], servers=servers, net=net, size=size,
                replicas=MFS_GOAL, cgroup=None)


def _mfs_empty_metadata() -> Path:
    for place in ("/var/lib/mfs/metadata.mfs.empty", "/usr/share/mfs/metadata.mfs.empty"):
        if Path(place).is_file():
            return Path(place)
    raise StepFailed("MooseFS's empty metadata file (metadata.mfs.empty) is missing",
                     "reinstall moosefs-master: `apt-get install --reinstall moosefs-master`")


def _wait_registered(log: Path, count: int, timeout: float = 30) -> None:
    """Until the master's log says `count` chunk servers have registered."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if log.read_text(errors="replace").count("chunkserver register end") >= count:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise StepFailed(f"the MooseFS chunk servers did not register with the master in {timeout:.0f} s: "
                     f"{log_tail(log)}")


# -- GlusterFS ----------------------------------------------------------------------------------------------------

def _brick_host() -> str:
    """A host name that resolves to loopback (the CLI refuses 127.0.0.1 and localhost as a brick's host)."""
    name = socket.gethostname()
    try:
        addr = socket.gethostbyname(name)
    except OSError:
        addr = ""
    if not addr.startswith("127."):
        raise StepFailed(f"this machine's name {name!r} does not resolve to a loopback address, which GlusterFS's "
                         "bricks need here", f"add `127.0.1.1 {name}` to /etc/hosts")
    return name


def _gluster(d: Path, pid: int, *args: str, timeout: float = 60) -> str:
    """The gluster CLI, in glusterd's mount namespace (it writes under /var/lib/glusterd), against our glusterd."""
    return run(["nsenter", f"--target={pid}", "--mount", tools.find("gluster") or "gluster", "--mode=script",
                f"--glusterd-sock={d / 'glusterd.socket'}", f"--log-file={d / 'log' / 'cli.log'}", *args],
               timeout=timeout)


def start_gluster(job: Up, target: Target, info: dict[str, Any]) -> None:
    """glusterd on 127.0.0.1 in a mount namespace of its own, a replica-2 volume of two XFS bricks, two clients."""
    _need(GLUSTER_NEEDS)
    d = _fresh(job, target)
    host = _brick_host()
    try:
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as glusterd binds: TIME-WAIT is no owner
            s.bind(("127.0.0.1", GLUSTERD_PORT))
    except OSError:
        raise StepFailed(f"127.0.0.1:{GLUSTERD_PORT} is taken (another glusterd, or another lab's GlusterFS?); "
                         "GlusterFS's bricks find glusterd only there",
                         "take the other one down (`iolens lab down --dir ...`) first") from None
    size = job.settings.size
    bricks = []
    for i in (1, 2):
        store = d / f"brick{i}"
        loop_filesystem(d / f"brick{i}.img", size, "xfs", store, job.record)
        bricks.append(f"{host}:{store / 'brick'}")
    work = d / "glusterd"
    work.mkdir()
    for sub in ("groups", "hooks"):
        if (Path(GLUSTER_DIRS[0]) / sub).is_dir():
            shutil.copytree(Path(GLUSTER_DIRS[0]) / sub, work / sub)
    binds = []
    for system in GLUSTER_DIRS:
        if Path(system).is_dir():
            ours = d / "system" / system.strip("/").replace("/", "-")
            ours.mkdir(parents=True)
            binds.append(f"mount --bind {shlex.quote(str(ours))} {shlex.quote(system)}")
    for sub in ("run", "log"):
        (d / sub).mkdir()
    (d / "glusterd.vol").write_text(
        "volume management\n    type mgmt/glusterd\n"
        f"    option working-directory {work}\n    option run-directory {d / 'run'}\n"
        f"    option glusterd-sockfile {d / 'glusterd.socket'}\n"
        "    option transport-type socket\n    option transport.socket.bind-address 127.0.0.1\n"
        f"    option transport.socket.listen-port {GLUSTERD_PORT}\n    option ping-timeout 0\n"
        "    option event-threads 1\nend-volume\n")
    glusterd = [tools.find("glusterd") or "glusterd", "-N", "-f", str(d / "glusterd.vol"),
                "-l", str(d / "log" / "glusterd.log"), "-p", str(d / "run" / "glusterd.pid")]
    drop = [f"umount -l {shlex.quote(m)} 2>/dev/null" for m in _foreign_mounts(d)]
    script = "; ".join([*drop, " && ".join([*binds, "exec " + " ".join(shlex.quote(a) for a in glusterd)])])
    proc, log = job.spawn(f"glusterd:{target.name}", ["unshare", "--mount", "--propagation", "slave",
                                                     "sh", "-c", script])
    wait_port(GLUSTERD_PORT, proc, log)
    _wait_cli(d, proc.pid, log)

    _gluster(d, proc.pid, "volume", "create", GLUSTER_VOLUME, "replica", "2", *bricks, "force")
    _gluster(d, proc.pid, "volume", "start", GLUSTER_VOLUME)
    servers = [{"name": "glusterd", "address": f"127.0.0.1:{GLUSTERD_PORT}", "ports": [GLUSTERD_PORT]}]
    servers += _brick_ports(d, proc.pid, size)

    paths = _clients(job, target, lambda i, mnt: [
        "glusterfs", "-N", "--volfile-server=127.0.0.1", f"--volfile-server-port={GLUSTERD_PORT}",
        f"--volfile-id={GLUSTER_VOLUME}", f"--log-file={d / 'log' / f'client{i}.log'}", str(mnt)])
    info.update(path=str(paths[0]), clients=[str(p) for p in paths], servers=servers, volume=GLUSTER_VOLUME,
                size=size, replicas=2, cgroup=None)


def _foreign_mounts(d: Path) -> list[str]:
    """The mounts glusterd's namespace drops as it starts (deepest first): all but the system's and the volume's own,
    so that it pins no other filesystem (another target's, another lab's) while it runs."""
    keep = [str(d), *GLUSTER_DIRS, *SYSTEM_PATHS]

    def needed(mp: str) -> bool:
        inside = (mp == k or k.startswith(mp.rstrip("/") + "/") for k in keep)  # mp holds a path we keep
        return any(inside) or mp.startswith((str(d) + "/", "/proc/", "/sys/", "/dev/"))

    return sorted({m["mountpoint"] for m in mounts() if not needed(m["mountpoint"])}, key=len, reverse=True)


def _wait_cli(d: Path, pid: int, log: Path, timeout: float = 20) -> None:
    """Until glusterd answers its CLI (it listens on its port a moment before)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            _gluster(d, pid, "volume", "list", timeout=10)
            return
        except StepFailed as err:
            if time.monotonic() > deadline:
                raise StepFailed(f"glusterd does not answer its CLI: {err}; {log_tail(d / 'log' / 'glusterd.log')}")
        time.sleep(0.2)


def _brick_ports(d: Path, pid: int, size: int) -> list[dict[str, Any]]:
    """The bricks as `volume status --xml` gives them (path, TCP port and pid)."""
    out = _gluster(d, pid, "volume", "status", GLUSTER_VOLUME, "--xml")
    try:
        nodes = ElementTree.fromstring(out).iter("node")
    except ElementTree.ParseError as err:
        raise StepFailed(f"gluster volume status gave no XML ({err})") from None
    bricks = []
    for node in nodes:
        path, port = node.findtext("path") or "", node.findtext("port") or ""
        if path.startswith(str(d)) and port.isdigit():
            bricks.append({"name": f"brick {Path(path).parent.name}", "address": f"127.0.0.1:{port}",
                           "ports": [int(port)], "storage": f"XFS on a {size >> 20} MiB loop image"})
    return bricks


# -- both ---------------------------------------------------------------------------------------------------------

def check(kind: Any, info: dict[str, Any], state: dict[str, Any]) -> tuple[bool, str | None]:
    """Every client mounted and answering, every recorded server and client alive."""
    root, name = Path(state["dir"]), info["name"]
    for key, rec in state.get("processes", {}).items():
        if key.endswith(f":{name}") and not process_alive(rec):
            return False, f"{key.rpartition(':')[0]} is not running"
    for mnt in client_paths(root, name):
        m = mount_at(mnt)
        if m is None:
            return False, f"{mnt} is not mounted"
        if m["fstype"] != info["fstype"]:
            return False, f"{mnt} is mounted as {m['fstype']}, not {info['fstype']}"
        if not responsive(mnt):
            return False, f"{mnt} does not answer (hung mount?)"
    return True, None


def stop_moosefs(root: Path, state: dict[str, Any], name: str) -> list[str]:
    return stop(root, state, name, netns=True)


def stop(root: Path, state: dict[str, Any], name: str, netns: bool = False) -> list[str]:
    """Take the volume down, whatever state its servers are in (and its network namespace with it, if it has one);
    what is left, if anything."""
    d = state_dir(root, name)
    left: list[str] = []
    ours = [k for k in state["processes"] if k.endswith(f":{name}")]
    clients = [k for k in ours if k.startswith(CLIENT_PROGRAMS)]
    # with a server gone, a client waits for it on unmount (MooseFS: 13 s): stop the clients first then
    servers_alive = all(process_alive(state["processes"][k]) for k in ours if k not in clients)
    for key in ([] if servers_alive else clients):
        if stop_process(state["processes"][key], timeout=1):
            del state["processes"][key]
    for mnt in client_paths(root, name):
        if not unmount(str(mnt)):
            left.append(f"{mnt} is still mounted")
        elif str(mnt) in state["mounts"]:
            state["mounts"].remove(str(mnt))
    for key in sorted((k for k in ours if k in state["processes"]), key=lambda k: k not in clients):
        if stop_process(state["processes"][key]):
            del state["processes"][key]
        else:
            left.append(f"process {state['processes'][key]['pid']} ({key}) did not stop")
    for pid in pids_mentioning(str(d) + "/"):  # what the servers forked (bricks, self-heal daemon)
        if not stop_process({"pid": pid, "start_time": process_start_time(pid)}):
            left.append(f"process {pid} of {d} did not stop")
    if d.exists():
        for path in sorted(mounts_under(d), key=len, reverse=True):
            if not unmount(path):
                left.append(f"{path} is still mounted")
            elif path in state["mounts"]:
                state["mounts"].remove(path)
        deadline = time.monotonic() + 15  # a lazily unmounted image lets go of its loop device a moment later
        while loops_backed_by(d) and time.monotonic() < deadline:
            for device, image in loops_backed_by(d):
                detach_loop(device, image)
        left += [f"{device} is still attached to {image}" for device, image in loops_backed_by(d)]
    state["loops"] = [lp for lp in state["loops"] if not lp["image"].startswith(str(d) + "/")
                      or lp["device"] in {dev for dev, _i in loops_backed_by(d)}]
    net = _net(root)
    if netns and netns_path(net["netns"]).exists() or link_exists(net["host_if"]):
        left += remove_netns(net["netns"], net["host_if"])
    if not left:
        shutil.rmtree(d, ignore_errors=True)
        if d.exists():
            left.append(f"{d} could not be removed")
    return left

