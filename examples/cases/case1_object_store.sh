#!/usr/bin/env bash
# Case 1 of the field notes, "object-store mount vs local copy", at small scale, as one command: an assembler-like
# multi-phase step (examples/cases/assembler_like.sh: one child process per phase, inputs read several times) with
# its inputs in the lab's S3 bucket, read through s3fs (lab:s3), rclone (lab:s3-rclone, Mountpoint-like
# semantics) and s3fs behind 5 ms of latency (lab:s3-remote), and staged to local disk first (copy-in with the S3
# API, run, copy-out). Per-phase times come from the profiler (compare --profile), the copy-in/run/copy-out split
# from the stage strategy, and the bytes each strategy moved from the object store from the profiles (direct) and
# the copy-in (stage).
#
# Usage (as root): examples/cases/case1_object_store.sh [--full] [WORK_DIR]
# Environment: IOLENS_CMD, IOLENS_LAB_DIR (a lab with s3, s3-rclone and s3-remote up; else one is brought up and
#   taken down after).
# Claims (examples/cases/claims.py): mount vs staged (no difference, at a 10% margin), bytes fetched, phases as child
# processes. Checks (at any scale): the profiles attribute at
# least 90% of the kernel's I/O bytes through every mount (rclone's full 64-bit inode numbers once cut them at 25%);
# staging fetches each input once (copy-in bytes = input bytes); reading through the mount, the step reads its inputs
# once per pass (what a FUSE client without a cache fetches again each time).
. "$(dirname "$0")/lib.sh"
need_root
# adaptive runs (compare --runs auto): until staged vs the mount is decided, at a 10% margin, or the budget is spent
if [ "$mode" = short ]; then pairs=20000; passes=3; runs=(--max-runs 20 --max-time 60s)
else pairs=300000; passes=3; runs=(--max-runs 12 --max-time 15m); fi
export passes
here=$(cd "$(dirname "$0")" && pwd)

synth "$work/synth" --ref-size 1000000 --pairs "$pairs"
lab_up s3 s3-rclone s3-remote
s3dir=$("${iolens[@]}" lab status --json | python3 -c 'import json,sys; print({t["name"]: t for t in json.load(sys.stdin)["targets"]}["s3"]["path"])')
key=case1-$$
mkdir -p "$s3dir/$key" "$work/out"
cp "$work/synth/reads_1.fq.gz" "$work/synth/reads_2.fq.gz" "$s3dir/$key/"
on_exit 'rm -rf "${s3dir:?}/$key"'
sleep 2  # rclone lists a directory again after 1 s

"${iolens[@]}" compare "bash $here/assembler_like.sh {d}/reads_1.fq.gz {d}/reads_2.fq.gz $passes {out}" \
  --input "d=lab:s3/$key" --place "out=$work/out" \
  --config "s3fs:d=lab:s3/$key,strategy=direct" --config "rclone:d=lab:s3-rclone/$key,strategy=direct" \
  --config "s3fs-remote:d=lab:s3-remote/$key,strategy=direct" --config "staged:d=lab:s3-remote/$key,strategy=stage" \
  --scratch "$work" --cache cold --profile --runs auto "${runs[@]}" --margin 10 --no-store -q \
  --json "$report/object-store.json" --html "$report/object-store.html"

# One profiled run read straight from the mount, caches dropped first: which files it read, and how often.
sync && echo 3 > /proc/sys/vm/drop_caches
"${iolens[@]}" profile -q --force -o "$work/direct.iolens" -- \
  bash "$here/assembler_like.sh" "$s3dir/$key/reads_1.fq.gz" "$s3dir/$key/reads_2.fq.gz" "$passes" "$work/out"
"${iolens[@]}" report "$work/direct.iolens" --json "$report/direct-profile.json" --html "$report/direct-profile.html" \
  | save_table "$report/direct-profile.txt"

python3 - "$report" "$work/synth" "$s3dir" >"$report/checks.sh" <<'PY'
import json, os, shlex, sys
report, synth, s3dir = sys.argv[1:4]
rep = json.load(open(f"{report}/object-store.json"))
prof = json.load(open(f"{report}/direct-profile.json"))
inputs = sum(os.path.getsize(os.path.join(synth, f"reads_{i}.fq.gz")) for i in (1, 2))
say = lambda s: print(f"echo {shlex.quote(s)}")
say(f"inputs: {inputs / 2**20:.1f} MiB in the bucket")
for r in rep["results"]:
    phases = (r["profile"] or {}).get("phases") or {}
    ph = ", ".join(f"{n} {p['wall_s']:.2f} s" for n, p in phases.items() if p["wall_s"] >= 0.01)
    if r["strategy"] == "stage":
        s = r["phases"]
        split = (f"copy-in {s['copy_in_s']:.2f} s ({s['copy_in_bytes'] / 2**20:.1f} MiB via {s['copy_via']}) / run "
                 f"{s['run_s']:.2f} s / copy-out {s['copy_out_s']:.2f} s")
    else:
        split = "read in place"
    cov = (r["profile"] or {}).get("io", {}).get("coverage")
    say(f"{r['name']}: median {r['median']:.2f} s over {r['ok_runs']} runs; {split}; profiled coverage "
        f"{cov if cov is None else round(cov, 2)}; phases over 10 ms: {ph}")
for c in rep["comparisons"]:
    say(f"verdict: {c['verdict']}")
staged = next(r for r in rep["results"] if r["strategy"] == "stage")["phases"]["copy_in_bytes"]
mount = sum(f["bytes_read"] or 0 for f in prof["files"] if f["path"].startswith(s3dir + "/"))
json.dump({"bytes_read_through_mount": mount, "input_bytes": inputs}, open(f"{report}/mount-bytes.json", "w"))
say(f"bytes from the object store: read through the mount {mount / 2**20:.1f} MiB (profiled run), "
    f"staged copy-in {staged / 2**20:.1f} MiB")
print(f"check staged-fetches-once {int(abs(staged - inputs) <= 0.01 * inputs)} "
      + shlex.quote(f"staging fetched {staged} bytes for {inputs} bytes of inputs"))
covs = {r["name"]: (r["profile"] or {}).get("io", {}).get("coverage") for r in rep["results"]}
print(f"check profiles-cover-kernel-bytes {int(all(c is not None and c >= 0.9 for c in covs.values()))} "
      + shlex.quote("the profiles attribute at least 90% of the kernel's I/O bytes through every mount: "
                    + ", ".join(f"{n} {'none' if c is None else f'{100 * c:.0f}%'}" for n, c in covs.items())))
passes = int(os.environ["passes"])
print(f"check mount-reads-per-pass {int(mount >= 0.99 * inputs * (1 + passes))} "
      + shlex.quote(f"through the mount the step read {mount / inputs:.2f}x its inputs (1 + {passes} passes)"))
PY
. "$report/checks.sh"
rm "$report/checks.sh"
claims case1
finish "Case 1: object-store mount vs local copy"
