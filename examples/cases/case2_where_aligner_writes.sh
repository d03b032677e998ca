#!/usr/bin/env bash
# Case 2 of the field notes, "where the aligner writes", at small scale, as one command:
#   1. minimap2's SAM output to /dev/null, to the disk its inputs are on, to another fast disk (lab:nvme) and to
#      another, slow disk (lab:magnetic, an emulated EBS magnetic volume: 40 MiB/s, 100 IOPS at the device);
#   2. `samtools sort -@` with its temp files and output on another fast disk (lab:nvme), on the SAM's own disk and
#      on the slow one, and with its output to /dev/null (temp files on the fast disk).
# Box plots, medians with 95% CIs and verdicts are in the compare pages (published design: 50 runs on small data,
# 10 runs on large; ours: adaptive runs, `compare --runs auto`, until each comparison is decided or the budget ends).
#
# Usage (as root): examples/cases/case2_where_aligner_writes.sh [--full] [WORK_DIR]
# Environment: IOLENS_CMD (default iolens), IOLENS_LAB_DIR (a lab with magnetic and nvme up; else one is brought up in
#   WORK_DIR and taken down after), DISK (the slow disk, default magnetic).
# Claims (examples/cases/claims.py): /dev/null, another fast disk and the slow disk against the inputs' own disk
# (minimap2); the slow disk, the SAM's own disk and /dev/null against another fast disk (sort). Checked (fails the
# case when not reproduced): sort with its temp files on the slow disk is slower than on the fast one.
. "$(dirname "$0")/lib.sh"
need_root
need_tool minimap2 minimap2
need_tool samtools samtools
disk=${DISK:-magnetic}
if [ "$mode" = short ]; then pairs=20000; ref=1000000; runs=(--max-runs 25 --max-time 45s)
else pairs=200000; ref=5000000; runs=(--max-runs 20 --max-time 15m); fi
threads=$(nproc)

synth "$work/synth" --ref-size "$ref" --pairs "$pairs"
mkdir -p "$work/out"
lab_up "$disk" nvme

# Output sizes in short mode are far below the dirty-page limits: `sync -f {out}` makes every configuration pay for
# writing its output back to the device, as a run whose output exceeds the dirty limits would.
"${iolens[@]}" compare 'minimap2 -ax sr -t 1 {ref} {r1} {r2} -o {out:aln.sam} 2>/dev/null && sync -f {out:aln.sam}' \
  --input "ref=$work/synth/ref.fa" --input "r1=$work/synth/reads_1.fq.gz" --input "r2=$work/synth/reads_2.fq.gz" \
  --place out=/dev/null --baseline same-disk \
  --config /dev/null:out=/dev/null --config "same-disk:out=$work/out" --config other-nvme:out=lab:nvme \
  --config "$disk:out=lab:$disk" --runs auto "${runs[@]}" --warmup 1 --no-store -q --json "$report/aligner-output.json" --html "$report/aligner-output.html"

[ -s "$work/aln.sam" ] || minimap2 -ax sr -t "$threads" "$work/synth/ref.fa" "$work/synth/reads_1.fq.gz" \
  "$work/synth/reads_2.fq.gz" -o "$work/aln.sam" 2>/dev/null
# -m 1M makes sort spill many temp BAMs (about -m x -@ at a time), which is where a slow disk hurts
# /dev/null: the output is thrown away, the temp files go to the fast disk (they cannot go to /dev/null)
"${iolens[@]}" compare \
  'samtools sort -@ {threads} -m 1M -T {tmp:sort} -o {out:sorted.bam} {sam} 2>/dev/null && sync -f {out:sorted.bam}' \
  --input "sam=$work/aln.sam" --param "threads=$threads" --place tmp=lab:nvme --place out=lab:nvme \
  --config other-nvme:tmp=lab:nvme,out=lab:nvme --config "same-disk:tmp=$work/out,out=$work/out" \
  --config /dev/null:tmp=lab:nvme,out=/dev/null --config "slow-$disk:tmp=lab:$disk,out=lab:$disk" \
  --runs auto "${runs[@]}" --warmup 1 --no-store -q --json "$report/sort-temp.json" --html "$report/sort-temp.html"

python3 - "$report" "$disk" >"$report/checks.sh" <<'PY'
import json, shlex, sys
report, disk = sys.argv[1], sys.argv[2]
def load(name):
    rep = json.load(open(f"{report}/{name}.json"))
    return {r["name"]: r for r in rep["results"]}, {c["name"]: c for c in rep["comparisons"]}
def line(r):
    return f"median {r['median']:.3f} s [{r['median_ci'][0]:.3f}, {r['median_ci'][1]:.3f}] over {r['ok_runs']} runs"
res, cmp_ = load("aligner-output")
for n, r in res.items():
    print(f"echo {shlex.quote(f'minimap2 -> {n}: {line(r)}')}")
for c in cmp_.values():
    print(f"echo {shlex.quote('minimap2: ' + c['verdict'])}")
res, cmp_ = load("sort-temp")
for n, r in res.items():
    print(f"echo {shlex.quote(f'samtools sort temp -> {n}: {line(r)}')}")
for c in cmp_.values():
    print(f"echo {shlex.quote('samtools sort: ' + c['verdict'])}")
PY
. "$report/checks.sh"
rm "$report/checks.sh"
claims case2
finish "Case 2: where the aligner writes"
