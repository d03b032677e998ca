"""Redaction of secrets: the rules (one copy, in redact.c, loaded by Python) and the proof that no form of secret
reaches the capture, `parse`, any report format, a pipeline report, replay and predict, or compare's outputs and the
results store, when a real command carrying it runs."""

from __future__ import annotations

import ctypes
import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import iolens
from iolens.redact import capture_env, redact_argv, redact_command, redact_record

# Every form of secret iolens knows, one row each: ("argv", the command line, the secret, text that must stay) or
# ("env", the variables, the secret, text that must stay).  Each secret is unique in the table, so the end-to-end
# tests find it (or not) in the bytes of a capture that holds every row at once.
FORMS = [
    # flags whose name announces a secret, in any spelling
    ("argv", ["tool", "--password", "SEC01pw"], "SEC01pw", ["--password"]),
    ("argv", ["tool", "--token=SEC02tk"], "SEC02tk", ["--token="]),
    ("argv", ["tool", "--api-key", "SEC03ak"], "SEC03ak", ["--api-key"]),
    ("argv", ["tool", "--pass", "SEC04ps"], "SEC04ps", ["--pass"]),
    ("argv", ["tool", "--pw", "SEC05pw"], "SEC05pw", ["--pw"]),
    ("argv", ["tool", "--pwd", "SEC06pw"], "SEC06pw", ["--pwd"]),
    ("argv", ["tool", "--auth=SEC07au"], "SEC07au", ["--auth="]),
    ("argv", ["wget", "--http-password=SEC08hp", "--user=me", "https://h/f"], "SEC08hp", ["--user=me", "https://h/f"]),
    ("argv", ["tool", "--client-secret", "SEC09cs"], "SEC09cs", ["--client-secret"]),
    ("argv", ["tool", "--x-token", "SEC10xt"], "SEC10xt", ["--x-token"]),
    ("argv", ["tool", "--clientSecret=SEC11cc"], "SEC11cc", ["--clientSecret"]),
    ("argv", ["tool", "-Password", "SEC12ps"], "SEC12ps", ["-Password"]),
    ("argv", ["tool", "-token", "SEC13tk"], "SEC13tk", ["-token"]),
    ("argv", ["tool", "--creds", "SEC14cr"], "SEC14cr", ["--creds"]),
    ("argv", ["java", "-Djavax.net.ssl.keyStorePassword=SEC15js", "-jar", "x.jar"], "SEC15js", ["-jar", "x.jar"]),
    ("argv", ["keytool", "-list", "-storepass", "SEC16sp", "-keystore", "ks.jks"], "SEC16sp", ["ks.jks"]),
    ("argv", ["openssl", "rsa", "-in", "k.pem", "-passin", "pass:SEC17os"], "SEC17os", ["k.pem"]),
    ("argv", ["s3cmd", "--secret_key=SEC18sk", "ls"], "SEC18sk", ["ls"]),
    # a secret-shaped value after a flag that may take one, although the flag is not known
    ("argv", ["tool", "--key", "Xk19Vq7LmN2pR8sT4wYz"], "Xk19Vq7LmN2pR8sT4wYz", ["--key"]),
    ("argv", ["tool", "--signing-key-material=Xk20Bq7LmN2pR8sT4wYz"], "Xk20Bq7LmN2pR8sT4wYz", ["--signing-key"]),
    ("argv", ["tool", "-k", "Xk21Cq7LmN2pR8sT4wYz", "in.txt"], "Xk21Cq7LmN2pR8sT4wYz", ["in.txt"]),
    ("argv", ["tool", "-pXk22Dq7LmN2pR8sT4wYz", "db"], "Xk22Dq7LmN2pR8sT4wYz", ["db"]),
    ("argv", ["tool", "--auth-code", "3f9a0c2e4b6d8f1a3c5e7b9d0f2a4c6e"], "3f9a0c2e4b6d8f1a3c5e7b9d0f2a4c6e",
     ["--auth-code"]),
    # curl: user:password, headers, JSON bodies
    ("argv", ["curl", "-u", "me:SEC24cu", "https://h/x"], "SEC24cu", ["me:", "https://h/x"]),
    ("argv", ["curl", "--user", "me:SEC25cu"], "SEC25cu", ["me:"]),
    ("argv", ["curl", "-ume:SEC26cu"], "SEC26cu", ["-ume:"]),
    ("argv", ["curl", "--user=me:SEC27cu"], "SEC27cu", ["--user=me:"]),
    ("argv", ["curl", "-H", "Authorization: Bearer SEC28ah", "https://h/x"], "SEC28ah", ["Authorization: Bearer"]),
    ("argv", ["curl", "--header", "X-Api-Key: SEC29xk"], "SEC29xk", ["X-Api-Key:"]),
    ("argv", ["curl", "-H", "Cookie: session=SEC30ck"], "SEC30ck", ["Cookie:"]),
    ("argv", ["wget", "--header=Authorization: token SEC31ah", "https://h/x"], "SEC31ah", ["Authorization: token"]),
    ("argv", ["curl", "-d", '{"user": "me", "password": "SEC32js"}', "https://h/x"], "SEC32js", ['"user": "me"']),
    ("argv", ["curl", "-H", "PRIVATE-TOKEN: SEC33gl", "https://gitlab/api"], "SEC33gl", ["PRIVATE-TOKEN:"]),
    # tools whose short flags take a password
    ("argv", ["mysql", "-u", "root", "-pSEC34my", "db"], "SEC34my", ["root", "db"]),
    ("argv", ["/usr/bin/mysqldump", "-p", "SEC35my", "db"], "SEC35my", ["/usr/bin/mysqldump", "db"]),
    ("argv", ["mariadb", "--password=SEC36mr"], "SEC36mr", ["mariadb"]),
    ("argv", ["sshpass", "-p", "SEC37sp", "ssh", "host"], "SEC37sp", ["ssh", "host"]),
    ("argv", ["sshpass", "-pSEC38sp", "mysql", "-pSEC39my"], "SEC39my", ["sshpass", "mysql"]),
    ("argv", ["sshpass", "-pSEC38sp", "true"], "SEC38sp", ["sshpass"]),
    ("argv", ["zip", "-P", "SEC40zp", "out.zip", "a.txt"], "SEC40zp", ["out.zip", "a.txt"]),
    ("argv", ["unzip", "-PSEC41uz", "in.zip"], "SEC41uz", ["in.zip"]),
    ("argv", ["7z", "a", "-pSEC42sz", "out.7z", "dir"], "SEC42sz", ["out.7z", "dir"]),
    ("argv", ["redis-cli", "-h", "cache", "-a", "SEC43rd", "ping"], "SEC43rd", ["cache", "ping"]),
    ("argv", ["docker", "login", "-u", "me", "-p", "SEC44dk", "registry.io"], "SEC44dk", ["me", "registry.io"]),
    ("argv", ["podman", "login", "-pSEC45pd", "quay.io"], "SEC45pd", ["quay.io"]),
    ("argv", ["smbclient", "//srv/share", "-U", "me%SEC46sm"], "SEC46sm", ["//srv/share", "me%"]),
    ("argv", ["smbclient", "//srv/share", "-Ume%SEC47sm"], "SEC47sm", ["-Ume%"]),
    ("argv", ["smbclient", "//srv/share", "--user=me%SEC48sm"], "SEC48sm", ["--user=me%"]),
    ("argv", ["lftp", "-u", "me,SEC49lf", "ftp.host"], "SEC49lf", ["me,", "ftp.host"]),
    ("argv", ["htpasswd", "-b", "users.htpasswd", "me", "SEC50ht"], "SEC50ht", ["users.htpasswd", "me"]),
    ("argv", ["htpasswd", "-nbB", "me", "SEC51ht"], "SEC51ht", ["-nbB", "me"]),
    ("argv", ["htpasswd", "-bc", "-C", "10", "f", "me", "SEC52ht"], "SEC52ht", ["10", "me"]),
    ("argv", ["mc", "alias", "set", "s3", "https://s3.host", "AKEY53", "SEC53mc"], "SEC53mc", ["https://s3.host",
                                                                                              "AKEY53"]),
    ("argv", ["mc", "config", "host", "add", "m", "http://m:9000", "AKEY54", "SEC54mc"], "SEC54mc", ["AKEY54"]),
    ("argv", ["ldapsearch", "-x", "-D", "cn=admin", "-w", "SEC55ld", "-b", "dc=x"], "SEC55ld", ["cn=admin", "dc=x"]),
    ("argv", ["sqlcmd", "-S", "db", "-U", "sa", "-P", "SEC56sq"], "SEC56sq", ["sa"]),
    ("argv", ["mongosh", "-u", "me", "-p", "SEC57mg", "mongodb://db"], "SEC57mg", ["mongodb://db"]),
    ("argv", ["az", "login", "--service-principal", "-u", "app", "-p", "SEC58az", "--tenant", "t"], "SEC58az",
     ["app", "--tenant"]),
    ("argv", ["mount", "-t", "cifs", "-o", "username=me,password=SEC59mt,uid=0", "//s/x", "/mnt"], "SEC59mt",
     ["username=me", "uid=0", "/mnt"]),
    # NAME=value, as given to env, docker -e or a shell
    ("argv", ["env", "FOO_TOKEN=SEC60nv", "true"], "SEC60nv", ["FOO_TOKEN="]),
    ("argv", ["env", "AWS_SECRET_ACCESS_KEY=ab/SEC61nv", "true"], "SEC61nv", ["AWS_SECRET_ACCESS_KEY="]),
    ("argv", ["env", "DB_PASS=SEC62nv", "true"], "SEC62nv", ["DB_PASS="]),
    ("argv", ["env", "AWS_CREDS=SEC63nv", "true"], "SEC63nv", ["AWS_CREDS="]),
    ("argv", ["env", "NXF_TOWER_ACCESS=SEC64nv", "true"], "SEC64nv", ["NXF_TOWER_ACCESS="]),
    ("argv", ["docker", "run", "-e", "API_KEY=SEC65dk", "-p", "8080:80", "img"], "SEC65dk", ["8080:80", "img"]),
    # aws, rclone, gsutil
    ("argv", ["aws", "configure", "set", "aws_secret_access_key", "SEC66aw"], "SEC66aw", ["aws_secret_access_key"]),
    ("argv", ["aws", "configure", "set", "profile.x.aws_session_token", "SEC67aw"], "SEC67aw", ["profile.x"]),
    ("argv", ["rclone", "config", "create", "r", "s3", "secret_access_key", "SEC68rc"], "SEC68rc", ["s3"]),
    ("argv", ["gsutil", "-o", "Credentials:gs_oauth2_refresh_token=SEC69gs", "cp", "a", "gs://b/a"], "SEC69gs",
     ["gs://b/a"]),
    # URLs: userinfo of any shape, secret query parameters, webhooks
    ("argv", ["aws", "s3", "cp", "https://b.s3.amazonaws.com/k?X-Amz-Credential=SEC70q&X-Amz-Signature=SEC70s&x=1",
              "."], "SEC70s", ["b.s3.amazonaws.com/k", "x=1"]),
    ("argv", ["wget", "https://h/f?X-Goog-Signature=SEC71gs"], "SEC71gs", ["https://h/f"]),
    ("argv", ["wget", "ftp://me:SEC72fp@h/f"], "SEC72fp", ["ftp://me:", "@h/f"]),
    ("argv", ["psql", "postgresql://me:SEC73pg@db.host/x", "-p", "5432"], "SEC73pg", ["@db.host/x", "5432"]),
    ("argv", ["git", "clone", "https://ghp_SEC74aBcDeFgHiJkLmNoPqRsTuVwXyZ012345@github.com/o/r.git"],
     "SEC74aBcDeFgHiJkLmNoPqRsTuVwXyZ012345", ["@github.com/o/r.git"]),
    ("argv", ["git", "clone", "https://SEC75tokenOnlyUserinfo@git.host/o/r"], "SEC75tokenOnlyUserinfo",
     ["git.host/o/r"]),
    ("argv", ["git", "clone", "https://oauth2:SEC76gl@gitlab.com/o/r"], "SEC76gl", ["oauth2:", "gitlab.com/o/r"]),
    ("argv", ["curl", "https://api.host/v1?access_token=SEC77at&page=2"], "SEC77at", ["page=2"]),
    ("argv", ["curl", "https://h/x?client_secret=SEC78cs"], "SEC78cs", ["client_secret="]),
    ("argv", ["curl", "https://h/x?apikey=SEC79ak&sig=SEC79sg"], "SEC79sg", ["apikey="]),
    ("argv", ["curl", "-d", "{}", "https://hooks.slack.com/services/T0A1/B0A2/SEC80slackHookSecret"],
     "SEC80slackHookSecret", ["https://hooks.slack.com"]),
    ("argv", ["curl", "https://discord.com/api/webhooks/123/SEC81discordHook"], "SEC81discordHook",
     ["discord.com/api/webhooks"]),
    # connection strings
    ("argv", ["psql", "host=db password=SEC82pg dbname=x"], "SEC82pg", ["host=db", "dbname=x"]),
    ("argv", ["az", "--connection-string",
              "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=SEC83az;EndpointSuffix=core.windows.net"],
     "SEC83az", ["AccountName=a", "EndpointSuffix=core.windows.net"]),
    ("argv", ["tool", "BlobEndpoint=https://a.blob.core.windows.net;SharedAccessSignature=sv=2022&sig=SEC84sa"],
     "SEC84sa", ["BlobEndpoint="]),
    ("argv", ["tool", "Server=db;Database=x;User Id=me;Password=SEC85ms;"], "SEC85ms", ["Database=x"]),
    ("argv", ["tool", "Server=db;Pwd=SEC86ms"], "SEC86ms", ["Server=db"]),
    # vendor tokens by prefix and shape, positional or after any flag; JWTs
    ("argv", ["tool", "ghp_SEC87aBcDeFgHiJkLmNoPqRsTuVwXyZ0123"], "SEC87aBcDeFgHiJkLmNoPqRsTuVwXyZ0123", ["ghp_"]),
    ("argv", ["tool", "--repo", "github_pat_11SEC88ABCDEFGHIJKLMNOP_qrstuvwxyz0123456789"],
     "11SEC88ABCDEFGHIJKLMNOP_qrstuvwxyz0123456789", ["--repo"]),
    ("argv", ["tool", "--channel", "xoxb-1234-5678-SEC89slackBotToken"], "1234-5678-SEC89slackBotToken",
     ["--channel"]),
    ("argv", ["tool", "xoxp-1111-2222-SEC90slackUserTok"], "1111-2222-SEC90slackUserTok", ["tool"]),
    ("argv", ["tool", "-m", "gpt", "sk-proj-SEC91openAiProjectKey0123456789"], "SEC91openAiProjectKey0123456789",
     ["gpt"]),
    ("argv", ["tool", "sk-ant-api03-SEC92anthropicKey0123456789"], "api03-SEC92anthropicKey0123456789", ["tool"]),
    ("argv", ["tool", "--config", "glpat-SEC93gitlabTok01234"], "SEC93gitlabTok01234", ["--config"]),
    ("argv", ["tool", "hf_SEC94huggingFaceTokenAbcdefghijklmn"], "SEC94huggingFaceTokenAbcdefghijklmn", ["tool"]),
    ("argv", ["tool", "AKIASEC95EXAMPLE0123"], "SEC95EXAMPLE0123", ["tool"]),
    ("argv", ["tool", "--input", "AIzaSEC96googleApiKey0123456789abcdefghi"], "SEC96googleApiKey0123456789abcdefghi",
     ["--input"]),
    ("argv", ["tool", "sk_live_SEC97stripeKey0123456789"], "SEC97stripeKey0123456789", ["tool"]),
    ("argv", ["tool", "npm_SEC98npmTokenAbcdefghijklmnopqrstuvw"], "SEC98npmTokenAbcdefghijklmnopqrstuvw", ["tool"]),
    ("argv", ["vault", "login", "hvs.SEC99vaultTokenAbcdefghij"], "SEC99vaultTokenAbcdefghij", ["login"]),
    ("argv", ["tool", "--data", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJTRUMxMDAifQ.SEC100jwtSignature_x"],
     "SEC100jwtSignature_x", ["--data"]),
    ("argv", ["tool", "eyJhbGciOiJSUzI1NiJ9.eyJTRUMxMDEiOjF9.c2lnbmF0dXJl"], "eyJTRUMxMDEiOjF9", ["tool"]),
    # key material: PEM and OpenSSH blocks as an argument or a flag value; .netrc text
    ("argv", ["tool", "-----BEGIN RSA PRIVATE KEY-----\nMIIEpSEC102rsaBody\n-----END RSA PRIVATE KEY-----\n"],
     "MIIEpSEC102rsaBody", ["-----BEGIN RSA PRIVATE KEY-----"]),
    ("argv", ["tool", "--cert-body", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlSEC103sshBody\n"
              "-----END OPENSSH PRIVATE KEY-----"], "b3BlSEC103sshBody", ["--cert-body"]),
    ("argv", ["tool", "--pem=-----BEGIN PRIVATE KEY-----\nMIIESEC104pkcs8\n-----END PRIVATE KEY-----"],
     "MIIESEC104pkcs8", ["--pem="]),
    ("argv", ["tool", "-----BEGIN EC PRIVATE KEY-----\nMHcSEC105ecBody"], "MHcSEC105ecBody", ["BEGIN EC"]),
    ("argv", ["printf", "machine h.example login me password SEC106nr\n"], "SEC106nr", ["machine h.example login me"]),
    ("argv", ["bash", "-c", "printf 'machine h2\\nlogin me\\npassword SEC107nr\\n' > ~/.netrc"], "SEC107nr",
     ["machine h2"]),
    # script text: every rule applies to the words of a shell script
    ("argv", ["bash", "-c", "true --password SEC108sh"], "SEC108sh", ["true --password"]),
    ("argv", ["sh", "-ec", "mysql -pSEC109sh db; mkdir -p x"], "SEC109sh", ["mkdir -p x"]),
    ("argv", ["bash", "-c", "curl -u me:SEC110sh -H 'Authorization: Bearer SEC110hd' https://h"], "SEC110sh",
     ["https://h"]),
    ("argv", ["bash", "-c", "curl -H 'Authorization: Bearer SEC111hd' https://h"], "SEC111hd", ["Bearer"]),
    ("argv", ["bash", "-o", "pipefail", "-c", 'export DB_PASSWORD="SEC112sh"; true'], "SEC112sh", ["export"]),
    ("argv", ["bash", "-c", 'sh -c "sshpass -p SEC113sh ssh h"'], "SEC113sh", ["ssh h"]),
    ("argv", ["bash", "-c", "printf 'GET / HTTP/1.1\\r\\nAuthorization: Basic SEC114sh\\r\\n' | nc h 80"], "SEC114sh",
     ["nc h 80"]),
    ("argv", ["ssh", "host", "mysql -u me --password=SEC115sh db"], "SEC115sh", ["mysql -u me"]),
    ("argv", ["bash", "-c", "git clone https://ghp_SEC116bashTokenAbcdefghijklmnopqrstu@github.com/o/r"],
     "SEC116bashTokenAbcdefghijklmnopqrstu", ["github.com/o/r"]),
    ("argv", ["bash", "-c", "zip -P SEC117sh o.zip f && 7z x -pSEC117sz a.7z"], "SEC117sh", ["o.zip"]),
    ("argv", ["bash", "-c", "7z x -pSEC118sz a.7z"], "SEC118sz", ["a.7z"]),
    ("argv", ["bash", "-c", "AWS_CREDS=SEC119sh NXF_TOWER_ACCESS=SEC119nx nextflow run x"], "SEC119sh",
     ["nextflow run x"]),
    ("argv", ["bash", "-c", "NXF_TOWER_ACCESS=SEC120nx nextflow run x"], "SEC120nx", ["nextflow run x"]),
    ("argv", ["bash", "-c", "docker login -u me -p SEC121dk reg && docker run -p 80:80 img"], "SEC121dk",
     ["-p 80:80 img"]),
    ("argv", ["bash", "-c", "curl -X POST https://hooks.slack.com/services/T1/B2/SEC122hook -d @msg.json"],
     "SEC122hook", ["@msg.json"]),
    ("argv", ["bash", "-c", "redis-cli -a SEC123rd ping"], "SEC123rd", ["ping"]),
    ("argv", ["bash", "-c", "export GH_TOKEN=xoxb-99-SEC124slackInScript; tool"], "SEC124slackInScript", ["tool"]),
    ("argv", ["bash", "-c", "echo '-----BEGIN OPENSSH PRIVATE KEY-----\nSEC125keyInScript\n"
              "-----END OPENSSH PRIVATE KEY-----' > id"], "SEC125keyInScript", ["> id"]),
    # the environment: kept variables whose name announces a secret lose their value, whatever the prefix rule
    ("env", {"AWS_SECRET_ACCESS_KEY": "SEC126ev"}, "SEC126ev", ["AWS_SECRET_ACCESS_KEY"]),
    ("env", {"AWS_SESSION_TOKEN": "SEC127ev"}, "SEC127ev", ["AWS_SESSION_TOKEN"]),
    ("env", {"AZURE_STORAGE_CONNECTION_STRING": "AccountName=a;AccountKey=SEC128ev"}, "SEC128ev", ["AccountName=a"]),
    ("env", {"AZURE_CLIENT_SECRET": "SEC129ev"}, "SEC129ev", ["AZURE_CLIENT_SECRET"]),
    ("env", {"GOOGLE_OAUTH_ACCESS_TOKEN": "SEC130ev"}, "SEC130ev", ["GOOGLE_OAUTH_ACCESS_TOKEN"]),
    ("env", {"S3_PASSWORD": "SEC131ev"}, "SEC131ev", ["S3_PASSWORD"]),
    ("env", {"NXF_OPTS": "-Xmx1g -Dpassword=SEC132ev"}, "SEC132ev", ["-Xmx1g"]),
    ("env", {"AWS_ENDPOINT_URL": "https://me:SEC133ev@minio:9000"}, "SEC133ev", ["@minio:9000"]),
    ("env", {"AWS_CREDS": "SEC134ev"}, "SEC134ev", ["AWS_CREDS"]),
    ("env", {"NXF_TOWER_ACCESS": "SEC135ev"}, "SEC135ev", ["NXF_TOWER_ACCESS"]),
    ("env", {"NXF_AUTH": "SEC136ev"}, "SEC136ev", ["NXF_AUTH"]),
    ("env", {"GOOGLE_API_KEY": "SEC137ev"}, "SEC137ev", ["GOOGLE_API_KEY"]),
    ("env", {"S3_KEY": "SEC138ev"}, "SEC138ev", ["S3_KEY"]),
    ("env", {"SNAKEMAKE_PASS": "SEC139ev"}, "SEC139ev", ["SNAKEMAKE_PASS"]),
    ("env", {"AZURE_SAS": "SEC140ev"}, "SEC140ev", ["AZURE_SAS"]),
    ("env", {"NXF_GIT_CONFIG": "ghp_SEC141envTokenAbcdefghijklmnopqrst"}, "SEC141envTokenAbcdefghijklmnopqrst",
     ["NXF_GIT_CONFIG"]),
    ("env", {"HTS_OPTS": "Authorization: Bearer SEC142ev"}, "SEC142ev", ["Authorization: Bearer"]),
]

# ordinary arguments, above all genomics ones, are never touched
UNCHANGED = [
    ["mkdir", "-p", "x"],
    ["mkdir", "-pv", "a/b"],
    ["samtools", "sort", "-@", "4", "-m", "1M", "-o", "out.bam", "in.sam"],
    ["samtools", "view", "-T", "ref.fa", "-@", "8", "x.cram"],
    ["minimap2", "-ax", "sr", "ref.fa", "r1.fq", "r2.fq"],
    ["bwa", "mem", "-t", "8", "-R", "@RG\\tID:x\\tSM:y", "ref.fa", "r1.fq", "r2.fq"],
    ["gzip", "--keep", "--bypass-cache", "x.fq"],
    ["samtools", "view", "-b", "-o", "o.bam", "in.bam", "chr1:100-200"],
    ["psql", "-p", "5432", "-h", "db", "--no-password", "x"],
    ["curl", "-o", "out", "https://h/x?part=1&sample=2"],
    ["bash", "-c", "mkdir -p x && samtools sort -@ 4 -m 1M -o o.bam i.sam | gzip --keep"],
    ["docker", "login", "--password-stdin", "-u", "me", "registry"],
    ["docker", "run", "-p", "8080:80", "-v", "/d:/d", "img"],
    ["java", "-Xmx4g", "-jar", "picard.jar", "MarkDuplicates", "I=in.bam", "O=out.bam", "M=metrics.txt",
     "CREATE_INDEX=true", "VALIDATION_STRINGENCY=LENIENT"],
    ["nextflow", "run", "main.nf", "-profile", "docker", "--input", "s3://bucket/samplesheet.csv"],
    ["sort", "--key", "2,2", "-k", "3", "f"],
    ["git", "clone", "ssh://git@github.com/o/r", "https://user@host/x"],
    ["7z", "x", "a.7z", "-ooutdir"],
    ["aws", "s3", "cp", "s3://b/sha256/3f9a0c2e4b6d8f1a3c5e7b9d0f2a4c6e/x.bam", "."],
    ["bcftools", "view", "-s", "NA12878,NA12891", "-Oz", "-o", "o.vcf.gz"],
    ["gatk", "--java-options", "-Xmx4g -Djava.io.tmpdir=/tmp", "HaplotypeCaller"],
    ["fastp", "-i", "a.fq", "-I", "b.fq", "--adapter_sequence", "AGATCGGAAGAGCACACGTCTGAACTCCAGTCA"],
    ["openssl", "x509", "-in", "-----BEGIN CERTIFICATE-----\nMIIBcert\n-----END CERTIFICATE-----"],
    ["tool", "--key", "sample_id", "--token-file", "/run/secrets/t"],
    ["htpasswd", "-v", "users.htpasswd", "me"],
    ["zip", "-r", "out.zip", "dir"],
    ["redis-cli", "-h", "cache", "ping"],
    ["printf", "the machine learning model needs no password\n"],
]


def _out(kind, given) -> str:
    """What the rules keep of a row: argv words or K=V items, NUL-separated."""
    if kind == "argv":
        return "\0".join(redact_argv(given))
    return "\0".join(f"{k}={v}" for k, v in capture_env(given).items())


@pytest.mark.parametrize("kind,given,secret,keep", FORMS, ids=[f"{i}:{str(f[1])[:40]}" for i, f in enumerate(FORMS)])
def test_each_form_is_redacted(kind, given, secret, keep):
    out = _out(kind, given)
    assert secret not in out
    assert "***" in out
    for text in keep:
        assert text in out, (text, out)
    if kind == "argv":
        assert len(redact_argv(given)) == len(given)
        assert redact_argv(redact_argv(given)) == redact_argv(given)  # redacting again (as the reader does): same


def test_the_table_keeps_growing():
    assert len(FORMS) >= 80
    assert len({f[2] for f in FORMS}) == len(FORMS)


@pytest.mark.parametrize("argv", UNCHANGED, ids=[" ".join(a)[:40] for a in UNCHANGED])
def test_ordinary_arguments_are_unchanged(argv):
    assert redact_argv(argv) == argv


def test_the_mask_replaces_only_the_secret():
    assert redact_argv(["tool", "--password", "x", "--token=y"]) == ["tool", "--password", "***", "--token=***"]
    assert redact_argv(["curl", "-u", "me:pw", "https://u:p@h/x?sig=s&part=1"]) == [
        "curl", "-u", "me:***", "https://u:***@h/x?sig=***&part=1"]
    assert redact_argv(["git", "https://ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123@github.com/o/r"]) == [
        "git", "https://***@github.com/o/r"]
    assert redact_argv(["x", "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123"]) == ["x", "ghp_***"]  # the vendor stays readable
    assert redact_argv(["x", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----"]) == [
        "x", "-----BEGIN PRIVATE KEY-----***-----END PRIVATE KEY-----"]
    assert redact_command("zip -P s3cret o.zip f") == "zip -P *** o.zip f"


def test_environment_rules():
    given = {k: v for kind, env, _s, _k in FORMS if kind == "env" for k, v in env.items()}
    got = capture_env(given | {"HOME": "/home/me", "PGPASSWORD": "x", "TMPDIR": "/scratch/tmp",
                               "OMP_NUM_THREADS": "8", "NXF_WORK": "/work", "AWS_REGION": "eu-west-1"})
    assert set(got) == set(given) | {"TMPDIR", "OMP_NUM_THREADS", "NXF_WORK", "AWS_REGION"}  # HOME, PGPASSWORD: never
    assert got["TMPDIR"] == "/scratch/tmp" and got["NXF_WORK"] == "/work" and got["AWS_REGION"] == "eu-west-1"
    assert got["AWS_CREDS"] == got["NXF_TOWER_ACCESS"] == "***"  # kept by prefix, the value masked by its name


def test_a_plain_environment_value_is_kept_as_the_rules_would_keep_it(tmp_path):
    """A kept variable's value that the rules cannot mark is copied in one pass, without them (redact_value.c,
    `rd_plain_value`): the rules built without that shortcut give the same output for every value of this file's
    forms, every word and script of them, and the edges of the shortcut (the 15-character token run, a leading
    '-', each character a rule starts from)."""
    src = Path(__file__).resolve().parent.parent / "native" / "preload"
    full = tmp_path / "libfull.so"
    subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-fvisibility=hidden", "-DIOLENS_REDACT_EXPORT",
                    "-DIOLENS_REDACT_NO_SHORTCUT", "-o", str(full), str(src / "redact.c"), str(src / "redact_value.c")],
                   check=True, timeout=120)
    lib = ctypes.CDLL(str(full))
    lib.iolens_capture_env.restype = ctypes.c_size_t
    lib.iolens_capture_env.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.c_char_p, ctypes.c_size_t]

    def rules(value: str) -> str:
        raw = os.fsencode(f"TMPDIR={value}")
        arr = (ctypes.c_char_p * 2)(raw, None)
        buf = ctypes.create_string_buffer(8 * len(raw) + 256)
        n = lib.iolens_capture_env(arr, buf, len(buf))
        return os.fsdecode(buf.raw[:n].rstrip(b"\0"))[len("TMPDIR="):]

    values = {v for _kind, given, _s, _k in FORMS for v in (given.values() if isinstance(given, dict) else given)}
    values |= {w for v in list(values) for w in v.split()} | {w for argv in UNCHANGED for w in argv}
    values |= {"xoxb-123456789a", "xoxb-123456789", "/x/xoxb-123456789ab", "a.xoxb-123456789ab",
               "eyJhbGciOi.eyJzdWIiOi.sig", "/etc/ssl/certs/ca-certificates.crt", "-pAbCdEfGh12345678", "8", "",
               "/scratch/tmp", "ghp_" + "a1" * 12,
               "AKIA" + "Z" * 16, "x" * 3000, "sk-" + "a" * 40} | {f"a{c}b" for c in ":= \t\r\n<>;|&()`'\"\\#@?/.%"}
    differ = [(v, capture_env({"TMPDIR": v}).get("TMPDIR"), rules(v)) for v in sorted(values)
              if capture_env({"TMPDIR": v}).get("TMPDIR") != rules(v)]
    assert len(values) > 300 and not differ, differ[:5]


def test_stored_records_are_redacted():
    job = {"command_template": "mysql -pS3cretA db", "settings": {"prepare": "curl -u me:S3cretB h", "runs": 2},
           "results": [{"command": "true --token S3cretC", "argv": ["x", "--pw", "S3cretD"], "n": 1}]}
    text = json.dumps(redact_record(job))
    assert not [s for s in ("S3cretA", "S3cretB", "S3cretC", "S3cretD") if s in text]
    assert redact_record(job)["settings"]["runs"] == 2 and redact_record(job)["results"][0]["n"] == 1


def test_odd_inputs():
    assert redact_argv([]) == []
    assert redact_argv(["", "--password", "", "x"]) == ["", "--password", "", "x"]  # nothing to hide
    assert redact_argv(["x", "caf\udce9=1"]) == ["x", "caf\udce9=1"]  # non-UTF-8 survives
    long_script = "true; " * 5000 + "mysql -pSEC99"
    out = redact_argv(["bash", "-c", long_script])
    assert out[2].endswith("mysql -p***") and "SEC99" not in out[2]
    many = "&".join(f"token{i}=SEC{i:02d}" for i in range(100))
    out = redact_argv(["curl", f"https://h/x?{many}"])[1]  # more masks than the rule table holds: the rest masked
    assert not re.search(r"SEC\d\d", out) and out.startswith("https://h/x?token0=***&token1=***")
    assert redact_argv(["x", ",".join(["https://u:SEC01@h"] * 10)])[1] == ",".join(["https://u:***@h"] * 10)


def test_hostile_inputs_take_linear_time():
    """The interposer runs these rules in every process it starts in: no input may make them slow."""
    import time

    for text in ("x://" * 16000, "password=" * 8000, "Authorization: x\n" * 4000, "a" * 60000 + ":",
                 "x://a?b=c&" * 6000, "bash -c '" * 6000, "https://u:p@h/x " * 4000, "-----BEGIN " * 6000,
                 "-----BEGIN X-----" * 4000, "eyJ" * 20000, "eyJaaaaaaaa." * 5000, "ghp_" * 15000,
                 "ghp_a." * 10000, "xoxb-" * 12000, "machine password " * 4000, "htpasswd -b " * 5000,
                 "https://" + "a" * 60000 + "@h", "https://h/webhooks" * 3000, "-p" * 30000, "A=" * 30000):
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


def _argv_rows():
    return [given for kind, given, _s, _k in FORMS if kind == "argv"]


def _secret_env():
    return {k: v for kind, env, _s, _k in FORMS if kind == "env" for k, v in env.items()}


def _script_and_env(tmp):
    """A shell script running every argv row as its own process (argv exactly as in the table: `exec -a`), the
    programs copies of `true` on PATH (the shells and env are the real ones), and the environment of every env row.
    The script text carries every secret too."""
    stubs = tmp / "bin"
    stubs.mkdir()
    true = shutil.which("true")
    assert true
    lines = []
    for given in _argv_rows():
        base = os.path.basename(given[0])
        if base not in ("bash", "sh", "env"):
            if not (stubs / base).exists():
                shutil.copy(true, stubs / base)
        lines.append(f"( exec -a {shlex.quote(given[0])} {shlex.quote(base)} {shlex.join(given[1:])} ) "
                     ">/dev/null 2>&1 || true")
    for name in ("nc", "nextflow", "tool", "git", "curl", "mysql", "zip", "7z", "redis-cli", "docker", "sshpass",
                 "ssh"):  # what the scripts run
        if not (stubs / name).exists():
            shutil.copy(true, stubs / name)
    lines.append("cat /etc/hostname > /dev/null")
    env = dict(os.environ, **_secret_env())
    env["PATH"] = f"{stubs}:{env['PATH']}"
    return "\n".join(lines), env


def _all_secrets() -> list[str]:
    return [secret for _kind, _given, secret, _keep in FORMS]


def _leaks(outputs: dict[str, bytes]) -> dict[str, list[str]]:
    return {name: leaked for name, data in outputs.items()
            if (leaked := [s for s in _all_secrets() if s.encode() in data])}


@pytest.fixture(scope="module")
def profiled_secrets(tmp_path_factory):
    """One --trace capture of the script that runs every row."""
    tmp = tmp_path_factory.mktemp("redact")
    script, env = _script_and_env(tmp)
    cap = tmp / "c.iolens"
    res = iolens("profile", "-q", "--trace", "-o", cap, "--", "bash", "-c", script, env=env, cwd=tmp)
    assert res.returncode == 0, res.stderr
    return tmp, cap, script


def test_profiled_forms_reach_the_capture_redacted(profiled_secrets):
    """Each row's process is in the capture with the argv the Python rules give (the interposer's are the same);
    the environment of every process has each secret variable masked."""
    tmp, cap, script = profiled_secrets
    doc = json.loads(iolens("parse", "--json", cap, check=True).stdout)
    argvs = [p["argv"] for p in doc["processes"]]
    missing = [given for given in _argv_rows() if redact_argv(given) not in argvs]
    assert not missing
    envs = [p["env"] for p in doc["processes"] if p["argv"][:1] == ["bash"]]
    assert envs and all(e.get(k) == capture_env({k: v})[k] for e in envs for k, v in _secret_env().items())
    assert doc["meta"]["command"] == redact_argv(["bash", "-c", script])  # iolens's own record, same rules


def test_no_secret_in_capture_parse_or_any_report(profiled_secrets):
    tmp, cap, script = profiled_secrets
    outputs: dict[str, bytes] = {"capture": _all_bytes(cap)}
    wide = {**os.environ, "COLUMNS": "400"}
    for name, args in {"parse": ["parse", cap], "parse --json": ["parse", "--json", cap],
                       "report (terminal)": ["report", cap],
                       "report --json": ["report", "-q", cap, "--json", "-"],
                       "report --csv": ["report", "-q", cap, "--csv", "-"]}.items():
        res = iolens(*args, env=wide)
        assert res.returncode == 0, (name, res.stderr)
        outputs[name] = (res.stdout + res.stderr).encode()
    files = {"html": tmp / "r.html", "chrome-trace": tmp / "t.json", "multiqc": tmp / "r_mqc.json"}
    res = iolens("report", "-q", cap, "--html", files["html"], "--chrome-trace", files["chrome-trace"],
                 "--multiqc", files["multiqc"], "--force")
    assert res.returncode == 0, res.stderr
    outputs.update({name: p.read_bytes() for name, p in files.items()})
    assert b"***" in outputs["report (terminal)"] and b"***" in outputs["html"]  # the command is shown, masked
    assert b"SEC" in outputs["parse --json"]  # the table's text that must stay is there: the check can fail
    assert not _leaks(outputs)


def test_no_secret_in_replay_or_predict(profiled_secrets):
    tmp, cap, _script = profiled_secrets
    target = tmp / "target"
    target.mkdir(exist_ok=True)
    outputs = {}
    for name, args in {"replay": ["replay", cap, "--on", target, "--json", "-"],
                       "predict": ["predict", cap, "--on", target, "--home", target, "--json", "-"]}.items():
        res = iolens(*args, env={**os.environ, "COLUMNS": "400", "IOLENS_DB": str(tmp / "db.sqlite")}, cwd=tmp)
        assert res.returncode == 0, (name, res.stderr)
        outputs[name] = (res.stdout + res.stderr).encode()
    assert not _leaks(outputs)


def test_no_secret_in_a_pipeline_report(tmp_path):
    """The same rows run by a pipeline task (the interposer in the environment, parts in a capture directory)."""
    from iolens.native import preload_library

    script, env = _script_and_env(tmp_path)
    captures = tmp_path / "captures"
    (captures / "parts").mkdir(parents=True)
    env.update(LD_PRELOAD=str(preload_library()), IOLENS_DIR=str(captures / "parts"))
    subprocess.run(["bash", "-c", script], env=env, cwd=tmp_path, check=True, timeout=300)
    outputs = {"parts": b"".join(_all_bytes(p) for p in (captures / "parts").rglob("*") if p.is_file())}
    res = iolens("report", captures, "--json", "-", "--html", tmp_path / "p.html")
    assert res.returncode in (0, 3), res.stderr
    outputs["pipeline --json"] = res.stdout.encode()
    outputs["pipeline html"] = (tmp_path / "p.html").read_bytes()
    res = iolens("report", captures, env={**os.environ, "COLUMNS": "400"})
    outputs["pipeline (terminal)"] = (res.stdout + res.stderr).encode()
    assert b"SEC" in outputs["parts"]
    assert not _leaks(outputs)


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


# ---- compare and the results store -------------------------------------------------------------------------------

def test_compare_keeps_no_secret_in_its_store_reports_or_results_output(tmp_path):
    db = tmp_path / "results.sqlite"
    secrets = ["S3cretPwCompare", "TokParamA1", "TokParamB2", "ZipPw0rdX", "PrepSecretY"]
    res = iolens("compare", "true --password=S3cretPwCompare --token {tok} && zip -P ZipPw0rdX /dev/null || true",
                 "--param", "tok=TokParamA1,TokParamB2", "--prepare", "curl -u me:PrepSecretY file:///dev/null || true",
                 "--runs", "2", "--seed", "3", "--db", db, "--json", tmp_path / "r.json", "--html", tmp_path / "r.html")
    assert res.returncode == 0, res.stderr
    rep = json.loads((tmp_path / "r.json").read_text())
    assert [r["name"] for r in rep["results"]] == ["***", "*** #2"]  # two configurations, their values hidden
    assert rep["results"][0]["command"].startswith("true --password=*** --token ***")
    outputs = {"compare (terminal)": (res.stdout + res.stderr).encode(), "json": (tmp_path / "r.json").read_bytes(),
               "html": (tmp_path / "r.html").read_bytes(), "store": db.read_bytes()}
    for wal in tmp_path.glob("results.sqlite-*"):
        outputs[wal.name] = wal.read_bytes()
    run_id = str(rep["store"]["run_id"])
    wide = {**os.environ, "COLUMNS": "400"}
    for name, args in {"results list": ["results", "list", "--db", db],
                       "results show": ["results", "show", "--db", db, run_id],
                       "results show --json": ["results", "show", "--db", db, run_id, "--json"],
                       "results export": ["results", "export", "--db", db],
                       "results export csv": ["results", "export", "--db", db, "--format", "csv"]}.items():
        r = iolens(*args, env=wide)
        assert r.returncode == 0, (name, r.stderr)
        outputs[name] = (r.stdout + r.stderr).encode()
    assert b"--password=***" in outputs["results list"] + outputs["results export"]
    leaked = {name: [s for s in secrets if s.encode() in data] for name, data in outputs.items()}
    assert not {k: v for k, v in leaked.items() if v}


def test_rows_stored_before_a_rule_are_shown_redacted(tmp_path):
    """A store written without redaction (an older iolens, an import) shows and exports no secret."""
    import sqlite3

    from iolens.store import ResultsStore

    db = tmp_path / "r.sqlite"
    with ResultsStore(db) as store:
        rid = store.add_run("compare", {"command_template": "x"}, {"host": "h"}, label="x")
        store.add_result(rid, "c", {"command": "x"})
    con = sqlite3.connect(db)
    con.execute("UPDATE runs SET label = ?, job = ?", ("zip -P OldSecret1 o.zip f",
                                                      json.dumps({"command_template": "mysql -pOldSecret2 db"})))
    con.execute("UPDATE results SET metrics = ?", (json.dumps({"command": "true --token OldSecret3"}),))
    con.commit()
    con.close()
    out = b""
    for args in (["results", "list"], ["results", "show", str(rid)], ["results", "export"]):
        r = iolens(*args, "--db", db, env={**os.environ, "COLUMNS": "400"})
        assert r.returncode == 0, r.stderr
        out += (r.stdout + r.stderr).encode()
    assert b"OldSecret" not in out and b"***" in out
