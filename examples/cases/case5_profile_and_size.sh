#!/usr/bin/env bash
# Case 5 of the field notes, "I/O profiling and storage sizing", at small scale, as one command:
#   1. a multi-step pipeline (examples/cases/pipeline_like.sh) profiled on a slow target (lab:magnetic, an emulated
#      EBS magnetic volume) and a fast one (lab:tmpfs): its I/O time split into small reads, small writes, sync and
#      streaming I/O, with the size histogram and IOPS over time in each report page;
#   2. the six-volume survey (gp2, gp3, st1, io2-100, io2-500, magnetic), each of about the same size (100 GiB;
#      st1 at its 125 GiB minimum), new volumes with burst credits where the type has them, and its time x
#      monthly-cost table with the best value named (`iolens compare` then `iolens cost --last`);
#   3. the profiler's own overhead on the run (plain vs the interposer alone vs `iolens profile`, interleaved).
#
# Usage (as root): examples/cases/case5_profile_and_size.sh [--full] [WORK_DIR]
# Environment: IOLENS_CMD, IOLENS_LAB_DIR (a lab with tmpfs and the six volumes up).
# Checks (at any scale): small reads are the largest I/O category on the emulated magnetic disk and a small share of
# the run on tmpfs, and their share of the run is at least 5x larger on magnetic than on tmpfs (published: 12 m 27 s
# of small reads on an HDD vs 12 s on NVMe). Claims (examples/cases/claims.py): the small-read share (checked), gp2 the
# best value, NVMe against gp2, the profiler's overhead.
. "$(dirname "$0")/lib.sh"
need_root
need_tool minimap2 minimap2
need_tool samtools samtools
# the survey and the overhead run adaptively (compare --runs auto) until decided or the budget is spent
if [ "$mode" = short ]; then pairs=20000; ref=4000000; regions=400; runs=(--max-runs 8 --max-time 90s)
  oruns=(--max-runs 30 --max-time 70s)
else pairs=100000; ref=10000000; regions=2000; runs=(--max-runs 8 --max-time 15m); oruns=(--max-runs 30 --max-time 10m); fi
here=$(cd "$(dirname "$0")" && pwd)
# all about 100 GiB (st1: its minimum), so time x cost compares like with like; nvme is the instance's own NVMe
volumes=(gp2 gp3 st1:125G io2-100 io2-500 magnetic nvme)
db=$work/results.sqlite

synth "$work/synth" --ref-size "$ref" --pairs "$pairs"
src=$work/src
mkdir -p "$src"
for m in 1 2; do [ -s "$src/reads_$m.fq" ] || gzip -dc "$work/synth/reads_$m.fq.gz" > "$src/reads_$m.fq"; done
cp "$work/synth/ref.fa" "$src/ref.fa"
samtools faidx "$src/ref.fa"
python3 - "$src/ref.fa.fai" "$regions" > "$src/regions.txt" <<'PY'
import random, sys
rng = random.Random(5)
contigs = [(l.split("\t")[0], int(l.split("\t")[1])) for l in open(sys.argv[1])]
for _ in range(int(sys.argv[2])):
    name, length = rng.choice(contigs)
    start = rng.randrange(1, max(2, length - 200))
    print(f"{name}:{start}-{start + 150}")
PY
lab_up tmpfs "${volumes[@]}"

for t in magnetic tmpfs; do
  d=$("${iolens[@]}" lab status --json | python3 -c 'import json,sys; print({t["name"]: t for t in json.load(sys.stdin)["targets"]}[sys.argv[1]]["path"])' "$t")/case5-$$
  mkdir -p "$d"
  on_exit "rm -rf '$d'"
  # staging the inputs in (and its sync) is set-up, not the pipeline: it is done before the profiled run
  bash "$here/pipeline_like.sh" "$src" "$d" "$regions" stage
  "${iolens[@]}" profile -q --force -o "$work/$t.iolens" -- bash "$here/pipeline_like.sh" "$src" "$d" "$regions" steps
  "${iolens[@]}" report "$work/$t.iolens" --json "$report/profile-$t.json" --html "$report/profile-$t.html" \
    | save_table "$report/profile-$t.txt"
  rm -rf "$d"
done

args=()
for v in "${volumes[@]}"; do args+=(--config "${v%%:*}:work=lab:$v"); done
"${iolens[@]}" compare "bash $here/pipeline_like.sh $src {work} $regions" --place work=lab:gp2 "${args[@]}" \
  --runs auto "${runs[@]}" --db "$db" -q --json "$report/six-volumes.json" --html "$report/six-volumes.html"
"${iolens[@]}" cost --last --db "$db" --runs-per-month 30 --no-store \
  --json "$report/cost.json" --html "$report/cost.html" | save_table "$report/cost.txt" tee

# The profiler's overhead on the step itself: the interposer with the recorder's variables, as `iolens profile` sets
# them, without starting the profiler's Python (interposed); and the whole `iolens profile`, Python's start and the
# capture's merge included, stated apart (profiled).
native=$("${iolens[@]}" doctor --json | python3 -c 'import json,sys; print(next(c["detail"] for c in json.load(sys.stdin)["checks"] if c["name"] == "native parts").rsplit(" in ", 1)[1])')
# (in RAM, as `iolens profile` stages; not named iolens-*, which leftover sweeps of killed runs may take for theirs)
stage=$(mktemp -d /dev/shm/case5-overhead.XXXXXX)
on_exit "rm -rf '$stage'"
"${iolens[@]}" compare "{wrap!words} bash $here/pipeline_like.sh $src {work} $regions" --place work=lab:tmpfs \
  --param wrap=env --config plain:wrap=env \
  --config "interposed:wrap=env LD_PRELOAD=$native/libiolens_preload.so IOLENS_DIR=$stage IOLENS_PARENT_PID=$$" \
  --config "profiled:wrap=${iolens[*]} profile -q --force -o $work/overhead.iolens --" \
  --runs auto "${oruns[@]}" --warmup 1 --no-store -q --json "$report/overhead.json" --html "$report/overhead.html"
parts=$(find "$stage" -name '*.part' 2>/dev/null | wc -l)
check interposer-recorded "$([ "$parts" -gt 0 ] && echo 1 || echo 0)" \
  "the interposed runs left $parts capture parts in $stage (none: the interposer did not record, the figure is void)"

python3 - "$report" >"$report/checks.sh" <<'PY'
import json, shlex, sys
report = sys.argv[1]
say = lambda s: print(f"echo {shlex.quote(s)}")
chk = lambda name, ok, msg: print(f"check {name} {int(bool(ok))} {shlex.quote(msg)}")
io_keys = ["tiny_read", "small_read", "streaming_read", "random_read", "tiny_write", "small_write",
           "streaming_write", "random_write", "metadata", "sync"]  # storage only: pipe waits are not
share = {}
for t in ("magnetic", "tmpfs"):
    rep = json.load(open(f"{report}/profile-{t}.json"))
    b = rep["breakdown"]
    total = sum(v for v in b.values() if v)
    io = {k: b.get(k) or 0 for k in io_keys}
    small = io["tiny_read"] + io["small_read"]
    share[t] = (small, total, io)
    say(f"{t}: {total:.2f} s of process time; small reads {small:.2f} s, small writes "
        f"{io['tiny_write'] + io['small_write']:.2f} s, sync {io['sync']:.2f} s, streaming "
        f"{io['streaming_read'] + io['streaming_write']:.2f} s, random reads {io['random_read']:.2f} s, "
        f"metadata {io['metadata']:.2f} s")
small, total, io = share["magnetic"]
nxt = max((k for k in io if k not in ("tiny_read", "small_read")), key=io.get)
margin = f" ({small / io[nxt]:.1f}x)" if io[nxt] > 0 else ""
chk("small-reads-dominate-on-slow-disk", small >= io[nxt],
    f"on magnetic small reads take {small:.2f} s, the next I/O category ({nxt}) {io[nxt]:.2f} s{margin}")
small_t, total_t, _ = share["tmpfs"]
chk("small-reads-minor-on-tmpfs", small_t < 0.1 * total_t and small_t < small,
    f"on tmpfs small reads take {small_t:.3f} s of {total_t:.2f} s ({100 * small_t / total_t:.1f}%)")
# shares of each run's own process time: they move less with the machine's load than a margin in seconds does
sh_m, sh_t = small / total, small_t / total_t
ratio = f"{sh_m / sh_t:.0f}x" if sh_t > 0 else "no small reads on tmpfs"
chk("small-read-share-ratio", sh_m >= 5 * sh_t,
    f"small reads are {100 * sh_m:.1f}% of the run's process time on magnetic and {100 * sh_t:.2f}% on tmpfs: "
    f"{ratio} (at least 5x)")
for r in json.load(open(f"{report}/six-volumes.json"))["results"]:
    say(f"{r['name']}: median {r['median']:.2f} s over {r['ok_runs']} runs")
cost = json.load(open(f"{report}/cost.json"))
say(f"cost: {cost['verdict']}")
ov = json.load(open(f"{report}/overhead.json"))
for c in ov["comparisons"]:
    say(f"profiler overhead on the tmpfs run ({c['name']}): {c['verdict']}")
PY
. "$report/checks.sh"
rm "$report/checks.sh"
claims case5
finish "Case 5: profile and size"
