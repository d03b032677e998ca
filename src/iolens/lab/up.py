"""`iolens lab up`: bring targets up, recording every resource in the state before moving on.

Components shared by several targets (the S3 server, toxiproxy, sshd) start once; when one fails, only the
targets that need it fail, each with the reason and how to fix it.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from iolens.errors import UsageError
from iolens.lab import state as st
from iolens.lab import tools
from iolens.lab.catalog import Target
from iolens.lab.down import release_target
from iolens.lab.kinds import ACCESS_KEY, BUCKET, kind_of
from iolens.lab.status import check, describe
from iolens.lab.sysops import (
    StepFailed,
    free_port,
    log_tail,
    mount_at,
    responsive,
    run,
    wait_mounted,
    wait_port,
)

PORTS = {"s3": 7070, "toxiproxy": 8474, "s3-proxy": 17070, "sshd": 2222, "ssh-proxy": 12222}


@dataclass
class Settings:
    size: int = 512 << 20  # loop images and tmpfs
    disk_size: int | None = None  # emulated disks (sparse images); None: each profile's default
    latency_ms: float = 5.0  # toxiproxy, per response (downstream)
    bandwidth_kbps: int = 51200  # toxiproxy, per connection and direction; 0 = unlimited
    credits: str | None = None  # emulated disks with burst credits: full, empty or PCT (None: a new volume's)
    time_scale: float = 1.0  # tests only (IOLENS_LAB_TIME_SCALE): credit buckets divided by this


class Up:
    def __init__(self, root: Path, state: dict[str, Any], settings: Settings, say: Callable[[str], None]):
        self.root = root
        self.state = state
        self.settings = settings
        self.say = say
        self.failed_components: dict[str, StepFailed] = {}
        self.is_root = os.geteuid() == 0

    # -- bookkeeping ------------------------------------------------------------------------------------------

    def save(self) -> None:
        st.save(self.root, self.state)

    def spawn(self, key: str, argv: list[str], *, env: dict | None = None) -> tuple[subprocess.Popen, Path]:
        """Start a long-running process in its own session, logging to logs/KEY.log; record it at once."""
        logs = self.root / "logs"
        logs.mkdir(exist_ok=True)
        log = logs / f"{key.replace(':', '-')}.log"
        exe = tools.find(argv[0])
        if exe is None:
            raise StepFailed(f"{argv[0]} is not installed", tools.install_hint(argv[0]))
        with open(log, "ab") as fh:
            proc = subprocess.Popen([exe, *argv[1:]], stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT,
                                    start_new_session=True, env=env, cwd=self.root)
        self.state["processes"][key] = {"pid": proc.pid, "start_time": st.process_start_time(proc.pid),
                                        "argv0": argv[0], "log": str(log)}
        self.save()
        return proc, log

    def add_mount(self, path: Path) -> None:
        if str(path) not in self.state["mounts"]:
            self.state["mounts"].append(str(path))
        self.save()

    def record(self, what: str, rec: dict[str, Any]) -> None:
        """Write down a loop device ({device, image}) or a mount ({path}) as soon as it is made."""
        if what == "loop":
            self.state["loops"].append(rec)
            self.save()
        else:
            self.add_mount(Path(rec["path"]))

    def mountpoint(self, name: str) -> Path:
        mnt = self.root / "mnt" / name
        mnt.mkdir(parents=True, exist_ok=True)
        return mnt

    def component(self, name: str, start: Callable[[], None]) -> None:
        """Start a shared component once; remember a failure so dependents fail the same way."""
        if name in self.failed_components:
            raise self.failed_components[name]
        try:
            start()
        except StepFailed as err:
            self.failed_components[name] = err
            raise

    def port(self, key: str) -> int:
        ports = self.state["ports"]
        if key not in ports:
            ports[key] = free_port(PORTS[key])
            self.save()
        return ports[key]

    # -- targets (how each kind starts is in kinds.py) -------------------------------------------------------------

    def bring_up(self, target: Target) -> dict[str, Any]:
        info: dict[str, Any] = {"status": "up", "fstype": target.fstype, "kind": target.kind,
                                "path": None, "error": None, "hint": None}
        kind = kind_of(target.kind)
        if kind.root and not self.is_root:
            raise StepFailed(f"lab:{target.name} needs root (it mounts a {target.kind})", "run `sudo iolens lab up`")
        # recorded before it starts, so that `down` stops it its kind's way even if this process dies half-way
        self.state["targets"][target.name] = {**info, "status": "starting"}
        self.save()
        kind.start(self, target, info)
        return info

    def fuse(self, target: Target, mnt: Path, argv: list[str], env: dict | None = None, key: str | None = None) -> None:
        if mount_at(mnt) is not None:
            raise StepFailed(f"{mnt} is already mounted; run `iolens lab down` first")
        if not os.path.exists("/dev/fuse"):
            raise StepFailed("/dev/fuse is missing (no FUSE in this kernel or container)",
                             "load the fuse module (`modprobe fuse`) or run where FUSE is allowed")
        proc, log = self.spawn(key or f"{argv[0]}:{target.name}", argv, env=env)
        self.add_mount(mnt)
        wait_mounted(mnt, proc, log)
        if not responsive(mnt, timeout=10):
            raise StepFailed(f"{mnt} is mounted but does not answer: {log_tail(log)}")

    # -- shared components ------------------------------------------------------------------------------------

    def start_s3(self) -> None:
        if "versitygw" in self.state["processes"] and st.process_alive(self.state["processes"]["versitygw"]):
            return
        if tools.find("versitygw") is None:
            raise StepFailed("the S3 server versitygw is not installed", tools.install_hint("versitygw"))
        settings = self.state["settings"]
        settings.setdefault("s3_secret", secrets.token_hex(16))
        s3 = self.root / "s3"
        (s3 / "data").mkdir(parents=True, exist_ok=True)
        passwd = s3 / "passwd"
        passwd.write_text(f"{ACCESS_KEY}:{settings['s3_secret']}\n")
        passwd.chmod(0o600)
        port = self.port("s3")
        env = dict(os.environ, ROOT_ACCESS_KEY=ACCESS_KEY, ROOT_SECRET_KEY=settings["s3_secret"])
        proc, log = self.spawn("versitygw", ["versitygw", "--port", f"127.0.0.1:{port}", "--quiet",
                                             "posix", str(s3 / "data")], env=env)
        wait_port(port, proc, log)
        self.create_bucket(port)

    def create_bucket(self, port: int) -> None:
        try:
            import boto3
            from botocore.config import Config
            from botocore.exceptions import ClientError
        except ImportError:
            raise StepFailed("boto3 is missing", "pip install boto3") from None
        client = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", aws_access_key_id=ACCESS_KEY,
                              aws_secret_access_key=self.state["settings"]["s3_secret"], region_name="us-east-1",
                              config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3}))
        try:
            client.create_bucket(Bucket=BUCKET)
        except ClientError as err:
            if err.response.get("Error", {}).get("Code") not in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                raise StepFailed(f"cannot create bucket {BUCKET} on versitygw: {err}") from None

    def start_toxiproxy(self) -> None:
        if "toxiproxy" in self.state["processes"] and st.process_alive(self.state["processes"]["toxiproxy"]):
            return
        if tools.find("toxiproxy-server") is None:
            raise StepFailed("toxiproxy is not installed", tools.install_hint("toxiproxy-server"))
        port = self.port("toxiproxy")
        proc, log = self.spawn("toxiproxy", ["toxiproxy-server", "-host", "127.0.0.1", "-port", str(port)])
        wait_port(port, proc, log)

    def proxy(self, name: str, port_key: str, upstream: int) -> int:
        """A toxiproxy proxy to 127.0.0.1:upstream with the lab's latency and bandwidth; returns its port."""
        listen = self.port(port_key)
        api = f"http://127.0.0.1:{self.state['ports']['toxiproxy']}"
        existing = _api(api, "GET", "/proxies")
        if name not in existing:
            _api(api, "POST", "/proxies", {"name": name, "listen": f"127.0.0.1:{listen}",
                                           "upstream": f"127.0.0.1:{upstream}", "enabled": True})
            s = self.settings
            if s.latency_ms > 0:
                _api(api, "POST", f"/proxies/{name}/toxics",
                     {"name": "latency", "type": "latency", "stream": "downstream",
                      "attributes": {"latency": int(round(s.latency_ms)), "jitter": 0}})
            if s.bandwidth_kbps > 0:
                for stream in ("downstream", "upstream"):
                    _api(api, "POST", f"/proxies/{name}/toxics",
                         {"name": f"bandwidth-{stream}", "type": "bandwidth", "stream": stream,
                          "attributes": {"rate": s.bandwidth_kbps}})
        self.state["settings"].setdefault("network", {"latency_ms": self.settings.latency_ms,
                                                      "bandwidth_kbps": self.settings.bandwidth_kbps})
        self.save()
        return listen

    def start_sshd(self) -> None:
        if "sshd" in self.state["processes"] and st.process_alive(self.state["processes"]["sshd"]):
            return
        for tool in ("sshd", "ssh-keygen", "sshfs"):
            if tools.find(tool) is None:
                raise StepFailed(f"{tool} is not installed", tools.install_hint(tool))
        ssh = self.root / "ssh"
        ssh.mkdir(mode=0o700, exist_ok=True)
        for key in ("host_key", "client_key"):
            if not (ssh / key).exists():
                run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "iolens-lab", "-f", str(ssh / key)])
        (ssh / "authorized_keys").write_text((ssh / "client_key.pub").read_text())
        export = self.root / "netfs" / "export"
        export.mkdir(parents=True, exist_ok=True)
        export.chmod(0o1777)
        port = self.port("sshd")
        (ssh / "sshd_config").write_text(
            f"ListenAddress 127.0.0.1:{port}\nHostKey {ssh / 'host_key'}\nPidFile none\n"
            f"AuthorizedKeysFile {ssh / 'authorized_keys'}\nPasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\nUsePAM no\nStrictModes no\n"
            "Subsystem sftp internal-sftp\n")
        if self.is_root:
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation directory
        proc, log = self.spawn("sshd", ["sshd", "-D", "-e", "-f", str(ssh / "sshd_config")])
        wait_port(port, proc, log)


def _api(base: str, method: str, path: str, body: dict | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read() or b"null")
    except (urllib.error.URLError, OSError, ValueError) as err:
        raise StepFailed(f"toxiproxy API {method} {path} failed: {err}") from None


def up(root: Path, targets: list[Target], settings: Settings, say: Callable[[str], None]) -> dict[str, Any]:
    """Bring `targets` up in `root`; targets already up and healthy are left alone. Returns the state."""
    if root == Path("/") or root == Path.home():
        raise UsageError(f"--dir {root} would put the lab's files directly in {root}; choose a dedicated directory")
    if root.exists() and not root.is_dir():
        raise UsageError(f"--dir {root} is a file; choose a directory")
    with st.locked(root):
        state = st.load(root)
        if state is None:
            strangers = [p.name for p in root.iterdir() if p.name != ".lock"]
            if strangers:
                raise UsageError(f"{root} already holds files ({strangers[0]}, ...) and no lab; "
                                 "choose an empty or new directory with --dir")
            state = st.empty_state(root)
        state["settings"].setdefault("size", settings.size)
        st.save(root, state)
        job = Up(root, state, settings, say)
        for target in targets:
            old = state["targets"].get(target.name)
            if old and old.get("status") == "up" and check(describe(target, old, state), state)[0]:
                say(f"up      lab:{target.name:<13} {old['path']} (already)")
                continue
            if old:  # failed or broken before: undo what is left of it first
                release_target(root, state, target.name)
                st.save(root, state)
            try:
                info = job.bring_up(target)
            except StepFailed as err:
                info = {"status": "failed", "fstype": target.fstype, "kind": target.kind, "path": None,
                        "error": str(err), "hint": err.hint or None}
                state["targets"][target.name] = info
                st.save(root, state)
                hint = f" ({err.hint})" if err.hint else ""
                say(f"FAILED  lab:{target.name:<13} {err}{hint}")
                continue
            state["targets"][target.name] = info
            st.save(root, state)
            say(f"up      lab:{target.name:<13} {info['path']}")
        return state
