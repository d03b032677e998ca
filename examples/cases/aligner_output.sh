#!/usr/bin/env bash
# Where the aligner writes (case 2 of the field notes), at small scale: minimap2's SAM output to /dev/null, to the
# disk its inputs are on, and to an emulated hard disk (`lab:magnetic`, EBS magnetic: slow at the device for every
# process; DISK=hdd for a 7200 rpm disk at 120 MiB/s).
#
# Usage: examples/cases/aligner_output.sh [--full] [WORK_DIR]
#   --full     larger data (400,000 read pairs) and 10 runs; the default short mode (8 runs) takes about 2 minutes
#   WORK_DIR   where the synthetic data, the outputs and the reports go (default: a new directory under $TMPDIR)
# Environment: IOLENS_CMD (default: iolens), DISK (the emulated disk, default: magnetic; e.g. hdd, st1, sc1),
#   IOLENS_LAB_DIR (a lab where lab:$DISK is already up; else one is brought up in WORK_DIR and taken down after).
# Needs root (the emulated disk is a loop device and mounts), minimap2, nbdkit and nbdfuse (`iolens lab install`).
#
# The outputs of the short mode (about 50 MiB of SAM) are far below the dirty-page limits, so the page cache would
# absorb them: the step ends with `sync -f {out}` (syncfs of the output's filesystem), so the compared time includes
# writing the output back to the device, as a real run whose output exceeds the dirty limits would.
set -euo pipefail
mode=short
if [ "${1:-}" = "--full" ]; then mode=full; shift; fi
work=${1:-$(mktemp -d "${TMPDIR:-/tmp}/aligner-output.XXXXXX")}
disk=${DISK:-magnetic}
read -r -a iolens <<<"${IOLENS_CMD:-iolens}"
if [ "$mode" = short ]; then pairs=60000; ref=2000000; runs=8; else pairs=400000; ref=5000000; runs=10; fi

command -v minimap2 >/dev/null || { echo "$0: minimap2 is not installed (Debian package minimap2)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "$0: the emulated disk needs root (loop devices and mounts)" >&2; exit 2; }
mkdir -p "$work/out"

if [ ! -f "$work/synth/reads_2.fq.gz" ]; then
  "${iolens[@]}" data synth -o "$work/synth" --ref-size "$ref" --pairs "$pairs"
fi

lab_dir=${IOLENS_LAB_DIR:-$work/lab}
export IOLENS_LAB_DIR=$lab_dir
if ! "${iolens[@]}" lab status --json | python3 -c 'import json,sys; t={x["name"]: x for x in json.load(sys.stdin)["targets"]}[sys.argv[1]]; sys.exit(0 if t["status"] == "up" and t["healthy"] else 1)' "$disk"; then
  "${iolens[@]}" lab up --only "$disk" -q
  trap '"${iolens[@]}" lab down -q' EXIT
fi

json=$work/aligner-output.json
"${iolens[@]}" compare 'minimap2 -ax sr -t 1 {ref} {r1} {r2} -o {out:aln.sam} 2>/dev/null && sync -f {out:aln.sam}' \
  --input "ref=$work/synth/ref.fa" --input "r1=$work/synth/reads_1.fq.gz" --input "r2=$work/synth/reads_2.fq.gz" \
  --place out=/dev/null \
  --config /dev/null:out=/dev/null --config "same-disk:out=$work/out" --config "$disk:out=lab:$disk" \
  --runs "$runs" --warmup 1 --no-store --force \
  --json "$json" --html "$work/aligner-output.html"

python3 - "$json" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))
by = {r["name"]: r for r in rep["results"]}
for r in rep["results"]:
    emu = [t["target"] for t in r["lab_targets"] if t["emulated"]]
    print(f"{r['name']:>10}: median {r['median']:.3f} s, 95% CI [{r['median_ci'][0]:.3f}, {r['median_ci'][1]:.3f}]"
          f" over {r['ok_runs']} runs, {r['io']['wchar'] / 2**20:.0f} MiB written"
          + (f" (emulated: {', '.join(emu)})" if emu else ""))
for c in rep["comparisons"]:
    lo, hi = c["rel_ci_low"], c["rel_ci_high"]
    print(f"verdict: {c['verdict']}")
    print(f"  effect of {c['name']} vs {c['baseline']}: median {100 * c['rel_diff']:+.1f}%, 95% CI "
          f"[{100 * lo:+.1f}%, {100 * hi:+.1f}%], p = {c['p_value']:.3g}")
PY
echo "report: $work/aligner-output.html"
