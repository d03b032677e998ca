#!/usr/bin/env bash
# Case 3 of the field notes, "shared filesystems for a cloud platform", at small scale, as one command:
#   1. the one-large-file (fdatasync'd) and many-500-KB-files tests at 1, 4 and 8 threads on each lab filesystem
#      (`iolens bench --suite classic`): ext4, xfs, btrfs (local disks), netfs (sshfs, the EFS/NFS stand-in),
#      s3 (s3fs), moosefs (MooseFS, the FSx for Lustre / LizardFS stand-in), gluster (GlusterFS, the EFS stand-in);
#      in full mode also with 2 clients at once (`--clients 2`, OpenMPI) on netfs;
#   2. a real step (minimap2) three ways: on the shared filesystem (netfs, moosefs, gluster), through a FUSE S3
#      mount (s3), and localize -> run -> delocalize (stage from the bucket), plus staging from netfs;
#   3. the monthly cost table of that step's options (`iolens cost`).
#
# Usage (as root): examples/cases/case3_shared_fs.sh [--full] [WORK_DIR]
# Environment: IOLENS_CMD, IOLENS_LAB_DIR (a lab with ext4, xfs, btrfs, netfs, s3, moosefs and gluster up; else one is
# brought up).
# Checks (at any scale): creating 500 KB files one by one through the object-store mount is slower than on a local
# ext4 disk (every file is a PUT); the shared filesystem over the network is slower than local ext4 for them too.
. "$(dirname "$0")/lib.sh"
need_root
need_tool minimap2 minimap2
if [ "$mode" = short ]; then size=24M; files=40; pairs=20000; runs=3; else size=256M; files=500; pairs=100000; runs=5; fi
targets=(ext4 xfs btrfs netfs s3 moosefs gluster)
# the published filesystem each lab target stands in for (its price: `iolens lab status`, `volume`)
declare -A stands_in=([ext4]="EBS with ext4" [xfs]="EBS with XFS" [btrfs]="EBS with BTRFS" [netfs]="EFS (as sshfs)"
  [s3]="S3 through a FUSE mount" [moosefs]="FSx for Lustre, LizardFS (as MooseFS)" [gluster]="EFS, Azure Files, Filestore (as GlusterFS)")
db=$work/results.sqlite

synth "$work/synth" --ref-size 1000000 --pairs "$pairs"
lab_up "${targets[@]}"

"${iolens[@]}" bench "${targets[@]/#/lab:}" --suite classic --threads 1,4,8 --size "$size" --files "$files" \
  --db "$db" --json "$report/classic.json" | save_table "$report/classic.txt"
for t in "${targets[@]}"; do echo "lab:$t stands in for ${stands_in[$t]}"; done | tee "$report/stand-ins.txt"
if [ "$mode" = full ]; then
  if command -v mpirun >/dev/null; then
    "${iolens[@]}" bench lab:netfs --clients 2 --size "$size" --db "$db" --json "$report/clients.json" \
      | save_table "$report/clients.txt"
  else
    missing "multi-client bench: mpirun is not installed (Debian package openmpi-bin); run \`iolens bench lab:netfs --clients 2\`"
  fi
fi

key=case3-$$
for t in netfs s3 moosefs gluster; do
  d=$("${iolens[@]}" lab status --json | python3 -c 'import json,sys; print({t["name"]: t for t in json.load(sys.stdin)["targets"]}[sys.argv[1]]["path"])' "$t")
  mkdir -p "$d/$key"
  cp "$work/synth/ref.fa" "$work/synth/reads_1.fq.gz" "$work/synth/reads_2.fq.gz" "$d/$key/"
  on_exit "rm -rf '$d/$key'"
done
mkdir -p "$work/out"
"${iolens[@]}" compare 'minimap2 -ax sr -t 2 {d}/ref.fa {d}/reads_1.fq.gz {d}/reads_2.fq.gz -o {out:aln.sam} 2>/dev/null' \
  --input "d=lab:netfs/$key" --place "out=lab:netfs" \
  --config "shared-netfs:d=lab:netfs/$key,out=lab:netfs,strategy=direct" \
  --config "fuse-s3:d=lab:s3/$key,out=lab:s3,strategy=direct" \
  --config "localize-s3:d=lab:s3/$key,out=lab:s3,strategy=stage" \
  --config "localize-netfs:d=lab:netfs/$key,out=lab:netfs,strategy=stage" \
  --config "shared-moosefs:d=lab:moosefs/$key,out=lab:moosefs,strategy=direct" \
  --config "shared-gluster:d=lab:gluster/$key,out=lab:gluster,strategy=direct" \
  --scratch "$work" --cache cold --runs auto --max-runs 15 --max-time "$([ "$mode" = short ] && echo 45s || echo 10m)" \
  --db "$db" -q \
  --json "$report/step-three-ways.json" --html "$report/step-three-ways.html"
"${iolens[@]}" cost --last --db "$db" --runs-per-month 30 --held-for always --no-store \
  --json "$report/cost.json" --html "$report/cost.html" | save_table "$report/cost.txt" tee

for f in classic cost; do
  python3 -c 'import html,sys; print("<!doctype html><meta charset=utf-8><pre>" + html.escape(open(sys.argv[1]).read()) + "</pre>")' \
    "$report/$f.txt" > "$report/$f-table.html"
done

python3 - "$report" >"$report/checks.sh" <<'PY'
import json, shlex, sys
report = sys.argv[1]
bench = json.load(open(f"{report}/classic.json"))
say = lambda s: print(f"echo {shlex.quote(s)}")
rate = {}
for r in bench["results"]:
    m = r["metrics"]
    tgt = r["target"].removeprefix("lab:")
    if "small" in r["test"] or "500" in r["test"] or "files" in r["test"]:
        if r["op"] in ("create", "write") and r["threads"] == 1:
            rate[tgt] = m["iops"]["mean"] or m["ops"]["mean"] / m["wall_s"]["mean"]
    say(f"{tgt:6} {r['test']:24} {r['op']:7} x{r['threads']}: {(m['throughput_Bps']['mean'] or 0) / 1e6:8.1f} MB/s"
        f" {(m['iops']['mean'] or 0):8.1f} ops/s")
rep = json.load(open(f"{report}/step-three-ways.json"))
for r in rep["results"]:
    say(f"minimap2 {r['name']}: median {r['median']:.2f} s over {r['ok_runs']} runs")
say(f"rates of 500 KB creates, 1 thread: {', '.join(f'{k} {v:.0f}/s' for k, v in rate.items())}")
if {"ext4", "s3", "netfs"} <= rate.keys():
    print(f"check s3-small-files {int(rate['s3'] < rate['ext4'])} "
          + shlex.quote(f"500 KB file creates through s3fs ({rate['s3']:.0f}/s) are slower than on ext4 ({rate['ext4']:.0f}/s)"))
    print(f"check netfs-small-files {int(rate['netfs'] < rate['ext4'])} "
          + shlex.quote(f"500 KB file creates on netfs ({rate['netfs']:.0f}/s) are slower than on ext4 ({rate['ext4']:.0f}/s)"))
else:
    print(f"check small-files-measured 0 {shlex.quote('no 500 KB create result for ext4, s3 and netfs: ' + str(sorted(rate)))}")
PY
. "$report/checks.sh"
rm "$report/checks.sh"
# the published claims (examples/cases/claims.py): localize and the FUSE S3 mount against the shared filesystem
# (minimap2, adaptive runs above), the shared filesystem the dearest per month
claims case3
finish "Case 3: shared filesystems"
