"""Redaction of secrets: the rules (one copy, in redact.c, loaded by Python) and the proof that no form of secret
reaches the capture, `parse` or any report format when a real command carrying it is profiled."""

from __future__ import annotations

import json
import os
import shlex

import pytest

from conftest import iolens
from iolens.redact import capture_env, redact_argv

# (argv as given, argv as recorded): every form of secret the rules know
FORMS = [
    # flags that announce a secret
    (["tool", "--password", "SEC01"], ["tool", "--password", "***"]),
    (["tool", "--token=SEC02", "--api-key", "SEC03"], ["tool", "--token=***", "--api-key", "***"]),
    (["tool", "--pass", "SEC04", "--pw", "SEC05"], ["tool", "--pass", "***", "--pw", "***"]),
    (["tool", "--pwd", "SEC06", "--auth=SEC07"], ["tool", "--pwd", "***", "--auth=***"]),
    (["wget", "--http-password=SEC08", "--user=me", "https://h/f"],
     ["wget", "--http-password=***", "--user=me", "https://h/f"]),
    # curl: user:password after -u/--user (and -uUSER:PW), headers
    (["curl", "-u", "me:SEC09", "https://h/x"], ["curl", "-u", "me:***", "https://h/x"]),
    (["curl", "--user", "me:SEC10", "-ume:SEC11", "--user=me:SEC12"],
     ["curl", "--user", "me:***", "-ume:***", "--user=me:***"]),
    (["curl", "-H", "Authorization: Bearer SEC13", "https://h/x"],
     ["curl", "-H", "Authorization: Bearer ***", "https://h/x"]),
    (["curl", "--header", "X-Api-Key: SEC14", "-H", "Cookie: session=SEC15"],
     ["curl", "--header", "X-Api-Key: ***", "-H", "Cookie: ***"]),
    (["wget", "--header=Authorization: token SEC16", "https://h/x"],
     ["wget", "--header=Authorization: token ***", "https://h/x"]),
    (["curl", "-d", '{"user": "me", "password": "SEC17"}', "https://h/x"],
     ["curl", "-d", '{"user": "me", "password": "***"}', "https://h/x"]),
    # -p is a password for mysql, mariadb and sshpass (and only for them)
    (["mysql", "-u", "root", "-pSEC18", "db"], ["mysql", "-u", "root", "-p***", "db"]),
    (["/usr/bin/mysqldump", "-p", "SEC19", "db"], ["/usr/bin/mysqldump", "-p", "***", "db"]),
    (["mariadb", "--password=SEC20"], ["mariadb", "--password=***"]),
    (["sshpass", "-p", "SEC21", "ssh", "host"], ["sshpass", "-p", "***", "ssh", "host"]),
    (["sshpass", "-pSEC22", "mysql", "-pSEC23"], ["sshpass", "-p***", "mysql", "-p***"]),
    # NAME=value, as given to env or a shell
    (["env", "FOO_TOKEN=SEC24", "true"], ["env", "FOO_TOKEN=***", "true"]),
    (["env", "AWS_SECRET_ACCESS_KEY=ab/SEC25", "DB_PASS=SEC26", "x"],
     ["env", "AWS_SECRET_ACCESS_KEY=***", "DB_PASS=***", "x"]),
    # aws, gsutil
    (["aws", "configure", "set", "aws_secret_access_key", "SEC27"],
     ["aws", "configure", "set", "aws_secret_access_key", "***"]),
    (["aws", "configure", "set", "profile.x.aws_session_token", "SEC28"],
     ["aws", "configure", "set", "profile.x.aws_session_token", "***"]),
    (["gsutil", "-o", "Credentials:gs_oauth2_refresh_token=SEC29", "cp", "a", "gs://b/a"],
     ["gsutil", "-o", "Credentials:***", "cp", "a", "gs://b/a"]),
    # URLs: password and signature query parameters
    (["aws", "s3", "cp", "https://b.s3.amazonaws.com/k?X-Amz-Credential=SEC30&X-Amz-Signature=SEC31&x=1", "."],
     ["aws", "s3", "cp", "https://b.s3.amazonaws.com/k?X-Amz-Credential=***&X-Amz-Signature=***&x=1", "."]),
    (["wget", "https://h/f?X-Goog-Signature=SEC32", "ftp://me:SEC33@h/f"],
     ["wget", "https://h/f?X-Goog-Signature=***", "ftp://me:***@h/f"]),
    (["psql", "postgresql://me:SEC34@db.host/x", "-p", "5432"],
     ["psql", "postgresql://me:***@db.host/x", "-p", "5432"]),
    (["psql", "host=db password=SEC35 dbname=x"], ["psql", "host=db password=*** dbname=x"]),
    # connection strings
    (["az", "--connection-string", "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=SEC36;"
                                   "EndpointSuffix=core.windows.net"],
     ["az", "--connection-string", "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=***;"
                                   "EndpointSuffix=core.windows.net"]),
    (["tool", "BlobEndpoint=https://a.blob.core.windows.net;SharedAccessSignature=sv=2022&sig=SEC37"],
     ["tool", "BlobEndpoint=https://a.blob.core.windows.net;SharedAccessSignature=***"]),
    (["tool", "Server=db;Database=x;User Id=me;Password=SEC38;", "Server=db;Pwd=SEC39"],
     ["tool", "Server=db;Database=x;User Id=me;Password=***;", "Server=db;Pwd=***"]),
    # script text: the rules apply to the words of a shell script
    (["bash", "-c", "true --password SEC40"], ["bash", "-c", "true --password ***"]),
    (["sh", "-ec", "mysql -pSEC41 db; mkdir -p x"], ["sh", "-ec", "mysql -p*** db; mkdir -p x"]),
    (["bash", "-c", "curl -u me:SEC42 -H 'Authorization: Bearer SEC43' https://h"],
     ["bash", "-c", "curl -u me:*** -H 'Authorization: Bearer ***' https://h"]),
    (["bash", "-o", "pipefail", "-c", 'export DB_PASSWORD="SEC44"; sh -c "sshpass -p SEC45 ssh h"'],
     ["bash", "-o", "pipefail", "-c", 'export DB_PASSWORD="***"; sh -c "sshpass -p *** ssh h"']),
    (["bash", "-c", "printf 'GET / HTTP/1.1\\r\\nAuthorization: Basic SEC46\\r\\n' | nc h 80"],
     ["bash", "-c", "printf 'GET / HTTP/1.1\\r\\nAuthorization: Basic ***\\r\\n' | nc h 80"]),
    (["ssh", "host", "mysql -u me --password=SEC47 db"], ["ssh", "host", "mysql -u me --password=*** db"]),
]

# ordinary arguments, above all genomics ones, are never touched
UNCHANGED = [
    ["mkdir", "-p", "x"],
    ["samtools", "sort", "-@", "4", "-m", "1M", "-o", "out.bam", "in.sam"],
    ["minimap2", "-ax", "sr", "ref.fa", "r1.fq", "r2.fq"],
    ["bwa", "mem", "-t", "8", "-R", "@RG\\tID:x\\tSM:y", "ref.fa", "r1.fq", "r2.fq"],
    ["gzip", "--keep", "--bypass-cache", "x.fq"],
    ["samtools", "view", "-b", "-o", "o.bam", "in.bam", "chr1:100-200"],
    ["psql", "-p", "5432", "-h", "db", "--no-password", "x"],
    ["curl", "-o", "out", "https://h/x?part=1&sample=2"],
    ["bash", "-c", "mkdir -p x && samtools sort -@ 4 -m 1M -o o.bam i.sam | gzip --keep"],
    ["docker", "login", "--password-stdin", "-u", "me", "registry"],
    ["java", "-Xmx4g", "-jar", "picard.jar", "MarkDuplicates", "I=in.bam", "O=out.bam", "M=metrics.txt"],
    ["nextflow", "run", "main.nf", "-profile", "docker", "--input", "s3://bucket/samplesheet.csv"],
]

ENV_FORMS = {
    "AWS_SECRET_ACCESS_KEY": ("SEC60", "***"),
    "AWS_SESSION_TOKEN": ("SEC61", "***"),
    "AZURE_STORAGE_CONNECTION_STRING": ("AccountName=a;AccountKey=SEC62", "AccountName=a;AccountKey=***"),
    "AZURE_CLIENT_SECRET": ("SEC63", "***"),
    "GOOGLE_OAUTH_ACCESS_TOKEN": ("SEC64", "***"),
    "S3_PASSWORD": ("SEC65", "***"),
    "NXF_OPTS": ("-Xmx1g -Dpassword=SEC66", "-Xmx1g -Dpassword=***"),
    "AWS_ENDPOINT_URL": ("https://me:SEC67@minio:9000", "https://me:***@minio:9000"),
    "TMPDIR": ("/scratch/tmp", "/scratch/tmp"),
    "OMP_NUM_THREADS": ("8", "8"),
}


def _secrets(values) -> set[str]:
    import re

    return {m for v in values for m in re.findall(r"SEC\d\d", v)}


@pytest.mark.parametrize("given,recorded", FORMS, ids=[" ".join(f[0])[:40] for f in FORMS])
def test_each_form_is_redacted(given, recorded):
    assert redact_argv(given) == recorded
    assert not _secrets(recorded)


@pytest.mark.parametrize("argv", UNCHANGED, ids=[" ".join(a)[:40] for a in UNCHANGED])
def test_ordinary_arguments_are_unchanged(argv):
    assert redact_argv(argv) == argv


def test_environment_rules():
    got = capture_env({k: v for k, (v, _) in ENV_FORMS.items()} | {"HOME": "/home/me", "PGPASSWORD": "x"})
    assert got == {k: want for k, (_, want) in ENV_FORMS.items()}  # HOME and PGPASSWORD are not kept at all


def test_odd_inputs():
    assert redact_argv([]) == []
    assert redact_argv(["", "--password", "", "x"]) == ["", "--password", "", "x"]  # nothing to hide
    assert redact_argv(["x", "caf\udce9=1"]) == ["x", "caf\udce9=1"]  # non-UTF-8 survives
    long_script = "true; " * 5000 + "mysql -pSEC99"
    out = redact_argv(["bash", "-c", long_script])
    assert out[2].endswith("mysql -p***") and "SEC99" not in out[2]
    many = "&".join(f"token{i}=SEC{i:02d}" for i in range(100))
    out = redact_argv(["curl", f"https://h/x?{many}"])[1]  # more masks than the rule table holds: the rest masked
    assert not _secrets([out]) and out.startswith("https://h/x?token0=***&token1=***")
    assert redact_argv(["x", ",".join(["https://u:SEC01@h"] * 10)])[1] == ",".join(["https://u:***@h"] * 10)


def test_hostile_inputs_take_linear_time():
    """The interposer runs these rules in every process it starts in: no input may make them slow."""
    import time

    for text in ("x://" * 16000, "password=" * 8000, "Authorization: x\n" * 4000, "a" * 60000 + ":",
                 "x://a?b=c&" * 6000, "bash -c '" * 6000, "https://u:p@h/x " * 4000):
        t = time.perf_counter()
        redact_argv(["bash", "-c", text, text])
        assert time.perf_counter() - t < 1.0, text[:20]


# ---- end to end: a real command carrying each secret, profiled ---------------------------------------------------

def _all_bytes(path) -> bytes:
    """The capture's bytes plus every zstd frame in it decompressed (TRACE records are compressed)."""
    import zstandard

    data = path.read_bytes()
    out = [data]
    start = data.find(b"\x28\xb5\x2f\xfd")
    while start >= 0:
        try:
            out.append(zstandard.ZstdDecompressor().decompressobj().decompress(data[start:]))
        except zstandard.ZstdError:
            pass
        start = data.find(b"\x28\xb5\x2f\xfd", start + 1)
    return b"\n".join(out)


@pytest.fixture(scope="module")
def profiled_secrets(tmp_path_factory):
    """One capture of a script that runs every form as its own process (argv[0] set with exec -a, the program
    itself `true`), with the secret environment set; the script text carries every secret too."""
    tmp = tmp_path_factory.mktemp("redact")
    lines = []
    for given, _ in FORMS:
        if given[0] in ("bash", "sh", "env"):
            lines.append(f"( exec {shlex.join(given)} ) >/dev/null 2>&1 || true")
        else:
            lines.append(f"( exec -a {shlex.quote(given[0])} true {shlex.join(given[1:])} )")
    lines.append("cat /etc/hostname > /dev/null")
    script = "\n".join(lines)
    env = dict(os.environ, **{k: v for k, (v, _) in ENV_FORMS.items()})
    env["PATH"] = f"{tmp}:{env['PATH']}"
    for name in ("tool", "nc", "ssh", "sshpass", "mysql", "curl"):  # stand-ins for the programs the scripts run
        (tmp / name).write_text("#!/bin/sh\nexit 0\n")
        (tmp / name).chmod(0o755)
    cap = tmp / "c.iolens"
    res = iolens("profile", "-q", "--trace", "-o", cap, "--", "bash", "-c", script, env=env, cwd=tmp)
    assert res.returncode == 0, res.stderr
    return tmp, cap, script


def test_profiled_forms_reach_the_capture_redacted(profiled_secrets):
    tmp, cap, script = profiled_secrets
    doc = json.loads(iolens("parse", "--json", cap, check=True).stdout)
    argvs = [p["argv"] for p in doc["processes"]]
    for given, recorded in FORMS:  # each process is there, with its argv redacted by the interposer
        assert recorded in argvs, given
    envs = [p["env"] for p in doc["processes"] if p["argv"][:1] == ["bash"]]
    assert envs and all(e.get(k) == want for e in envs for k, (_, want) in ENV_FORMS.items())
    assert doc["meta"]["command"] == redact_argv(["bash", "-c", script])  # iolens's own record, same rules


def test_no_secret_in_capture_parse_or_any_report(profiled_secrets):
    tmp, cap, script = profiled_secrets
    planted = _secrets([script]) | _secrets(v for v, _ in ENV_FORMS.values())
    assert len(planted) == 47 + 8
    outputs: dict[str, bytes] = {"capture": _all_bytes(cap)}
    for name, args in {"parse": ["parse", cap], "parse --json": ["parse", "--json", cap],
                       "report (terminal)": ["report", cap],
                       "report --json": ["report", "-q", cap, "--json", "-"],
                       "report --csv": ["report", "-q", cap, "--csv", "-"]}.items():
        res = iolens(*args, env={**os.environ, "COLUMNS": "400"})
        assert res.returncode == 0, (name, res.stderr)
        outputs[name] = (res.stdout + res.stderr).encode()
    files = {"html": tmp / "r.html", "chrome-trace": tmp / "t.json", "multiqc": tmp / "r_mqc.json"}
    res = iolens("report", "-q", cap, "--html", files["html"], "--chrome-trace", files["chrome-trace"],
                 "--multiqc", files["multiqc"], "--force")
    assert res.returncode == 0, res.stderr
    outputs.update({name: p.read_bytes() for name, p in files.items()})
    assert b"***" in outputs["report (terminal)"] and b"***" in outputs["html"]  # the command is shown, masked
    for name, data in outputs.items():
        leaked = sorted(s for s in planted if s.encode() in data)
        assert not leaked, f"{name} shows {leaked}"


def test_meta_command_of_a_direct_command(tmp_path):
    """`iolens profile -- CMD` with the secret in CMD's own argv (no shell)."""
    cap = tmp_path / "c.iolens"
    res = iolens("profile", "-q", "-o", cap, "--", "env", "FOO_TOKEN=SEC70", "true", "--pw", "SEC71")
    assert res.returncode == 0, res.stderr
    raw = cap.read_bytes()
    assert b"SEC70" not in raw and b"SEC71" not in raw
    doc = json.loads(iolens("parse", "--json", cap, check=True).stdout)
    assert doc["meta"]["command"] == ["env", "FOO_TOKEN=***", "true", "--pw", "***"]
    assert ["env", "FOO_TOKEN=***", "true", "--pw", "***"] in [p["argv"] for p in doc["processes"]]
