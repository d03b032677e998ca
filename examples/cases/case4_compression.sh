#!/usr/bin/env bash
# Case 4 of the field notes, "filesystem compression", at small scale, as one command (ZFS in the published
# experiment; btrfs here: lzo ~ lz4, zlib:6 ~ gzip-6, zstd:3):
#   1. the on-disk ratio of a FASTQ on each filesystem (compsize) and in memory (`iolens compress`);
#   2. the CPU the kernel spends compressing while the FASTQ is written and synced (kernel threads' CPU time);
#   3. the `samtools sort -@ ALL_CPUS` time penalty on each filesystem (`iolens compress --fs --run`);
#   4. random 4 KiB IOPS (queue depth 1 and 32) and 1-8 stream bandwidth on tmpfs, nvme and gp3 (`iolens bench`);
#   5. NUMA binding, where the machine has more than one node (it says so when it has one).
# Full mode: 200,000 aligned read pairs (minimap2; a 173 MB SAM), both binned and full-resolution qualities, 4 runs
# per filesystem, 2 GiB lab images; a few minutes on 2 CPUs. Claims (examples/cases/claims.py, on the binned
# qualities): the FASTQ ratio of gzip-6 above lz4's, gzip levels 1/6/9 in memory, the sort's penalty under zlib
# (checked) and lzo's below it, NUMA binding.
#
# Usage (as root): examples/cases/case4_compression.sh [--full] [WORK_DIR]
# Environment: IOLENS_CMD, IOLENS_LAB_DIR (a lab with btrfs, btrfs-lzo, btrfs-zstd, btrfs-zlib, tmpfs, nvme, gp3 up).
# Checks (at any scale): the FASTQ is smaller on disk on each compressing btrfs and not on plain btrfs; writing it
# to btrfs-zlib costs the kernel more CPU than writing it to plain btrfs; tmpfs does more random 4 KiB reads per
# second than the emulated gp3 volume.
. "$(dirname "$0")/lib.sh"
need_root
need_tool samtools samtools
if [ "$mode" = short ]; then pairs=30000; runs=6; qualities=binned; size=32M; else pairs=200000; runs=4; qualities="binned full"; size=256M; fi
# The sort writes its output uncompressed (-l 0) so the filesystem does the compressing (as ZFS did), and syncs
# it, so each filesystem's compression is paid inside the timed run (the output is far below the dirty limits).
sort_cmd='samtools sort -@ {threads} -l 0 -m 64M -o {dir}/out.bam {dir}/in.sam 2>/dev/null && sync -f {dir}/out.bam'
threads=$(nproc)
fs=lab:btrfs,lab:btrfs-lzo,lab:btrfs-zstd,lab:btrfs-zlib
[ "$mode" = short ] || export LAB_SIZE=${LAB_SIZE:-2G}  # the full sort's input, output and temp files
lab_up btrfs btrfs-lzo btrfs-zstd btrfs-zlib tmpfs nvme gp3

for q in $qualities; do
  d=$work/synth-$q
  synth "$d" --ref-size "$([ "$mode" = full ] && echo 5000000 || echo 1000000)" --pairs "$pairs" --quality "$q"
  [ -s "$d/reads_1.fq" ] || gzip -dc "$d/reads_1.fq.gz" > "$d/reads_1.fq"
  if [ ! -s "$d/in.sam" ]; then
    # full mode sorts aligned reads (coordinates to sort by, a 173 MB SAM); short mode unaligned ones, for speed
    if [ "$mode" = full ] && command -v minimap2 >/dev/null; then
      minimap2 -ax sr -t "$threads" "$d/ref.fa" "$d/reads_1.fq.gz" "$d/reads_2.fq.gz" > "$d/in.sam" 2>/dev/null
    else
      samtools import -0 "$d/reads_1.fq" -o "$d/in.sam"
    fi
  fi
  "${iolens[@]}" compress --fs "$fs" "$d/reads_1.fq" --no-store --json "$report/$q-fastq-fs.json" \
    | save_table "$report/$q-fastq-fs.txt"
  "${iolens[@]}" compress "$d/reads_1.fq" --codecs zlib:1,zlib:6,zlib:9,lz4:1,zstd:3 --threads 1 --sample 16M --no-store \
    --json "$report/$q-codecs.json" --html "$report/$q-codecs.html" | save_table "$report/$q-codecs.txt"
  "${iolens[@]}" compress --fs "$fs" "$d/in.sam" --threads "$threads" --runs "$runs" --no-store \
    --run "$sort_cmd" --json "$report/$q-sort.json" \
    | save_table "$report/$q-sort.txt"
done

# The kernel compresses in its own threads (btrfs workqueues), so the writer's CPU time does not show it: sum the
# CPU time of every kernel thread around writing and syncing the same file on each filesystem.
"${iolens[@]}" lab status --json > "$work/lab-status.json"
python3 - "$work/synth-binned/reads_1.fq" "$work/lab-status.json" > "$report/kernel-cpu.json" <<'PY'
import json, os, shutil, sys, time
src, status_file = sys.argv[1], sys.argv[2]
def kthread_ticks():
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(f[6]) & 0x00200000:  # PF_KTHREAD
            total += int(f[11]) + int(f[12])
    return total / os.sysconf("SC_CLK_TCK")
status = {t["name"]: t for t in json.load(open(status_file))["targets"]}
out = {}
for name in ("btrfs", "btrfs-lzo", "btrfs-zstd", "btrfs-zlib"):
    best = None
    for _ in range(3):
        dst = os.path.join(status[name]["path"], f"kcpu-{os.getpid()}.fq")
        os.sync()
        before, t0 = kthread_ticks(), time.monotonic()
        shutil.copyfile(src, dst)
        fd = os.open(dst, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
        cpu, wall = kthread_ticks() - before, time.monotonic() - t0
        os.unlink(dst)
        best = cpu if best is None else min(best, cpu)
    out[name] = {"kernel_cpu_s": best, "bytes": os.path.getsize(src)}
print(json.dumps(out, indent=1))
PY

"${iolens[@]}" bench lab:tmpfs lab:nvme lab:gp3 --suite random --size "$size" --runtime 1 --no-store \
  --json "$report/random.json" | save_table "$report/random.txt"
"${iolens[@]}" bench lab:tmpfs lab:nvme lab:gp3 --suite streams --threads 1,2,4,8 --size "$size" --no-store \
  --json "$report/streams.json" | save_table "$report/streams.txt"

nodes=$(ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l)
if [ "$nodes" -le 1 ]; then
  echo "NUMA: this machine has one NUMA node (${nodes}); binding cannot be compared here" | tee -a "$checks"
elif command -v numactl >/dev/null; then
  "${iolens[@]}" compare '{wrap!words} samtools sort -@ 2 -m 64M -o /dev/null {sam}' \
    --input "sam=$work/synth-binned/in.sam" --param wrap=env \
    --config plain:wrap=env --config 'bound:wrap=numactl --cpunodebind=0 --membind=0' \
    --runs "$runs" --no-store -q --json "$report/numa.json" --html "$report/numa.html"
else
  missing "NUMA binding: $nodes nodes but numactl is not installed (Debian package numactl)"
fi

for f in "$report"/*.txt; do
  python3 -c 'import html,sys; print("<!doctype html><meta charset=utf-8><pre>" + html.escape(open(sys.argv[1]).read()) + "</pre>")' \
    "$f" > "${f%.txt}-table.html"
done

python3 - "$report" "$qualities" "$mode" >"$report/checks.sh" <<'PY'
import json, shlex, sys
report, qualities, mode = sys.argv[1], sys.argv[2].split(), sys.argv[3]
say = lambda s: print(f"echo {shlex.quote(s)}")
chk = lambda name, ok, msg: print(f"check {name} {int(bool(ok))} {shlex.quote(msg)}")
for q in qualities:
    fsr = {f["target"].removeprefix("lab:"): f["on_disk"]["ratio"] for f in json.load(open(f"{report}/{q}-fastq-fs.json"))["filesystems"]}
    codecs = {r["codec"] + ":" + str(r["level"]): r["ratio"] for i in json.load(open(f"{report}/{q}-codecs.json"))["inputs"] for r in i["rows"]}
    say(f"{q} FASTQ ratio on disk: " + ", ".join(f"{k} {v:.2f}x" for k, v in fsr.items())
        + "; in memory: " + ", ".join(f"{k} {v:.2f}x" for k, v in codecs.items() if v))
    chk(f"{q}-plain-btrfs-ratio", abs(fsr["btrfs"] - 1) < 0.05, f"plain btrfs stores the FASTQ at {fsr['btrfs']:.2f}x")
    for t in ("btrfs-lzo", "btrfs-zstd", "btrfs-zlib"):
        chk(f"{q}-{t}-smaller", fsr[t] > 1.2, f"{t} stores the FASTQ at {fsr[t]:.2f}x (compsize)")
    sort = json.load(open(f"{report}/{q}-sort.json"))["compare"]
    base = {r["name"]: r for r in sort["results"]}
    sam = {f["target"].removeprefix("lab:"): f["on_disk"]["ratio"] for f in json.load(open(f"{report}/{q}-sort.json"))["filesystems"]}
    say(f"{q} SAM ratio on disk: " + ", ".join(f"{k} {v:.2f}x" for k, v in sam.items()))
    for c in sort["comparisons"]:
        say(f"{q} samtools sort -@ {json.load(open(f'{report}/{q}-sort.json'))['threads']} -l 0 + sync: {c['name']} "
            f"{base[c['name']]['median']:.2f} s vs {c['baseline']} {base[c['baseline']]['median']:.2f} s: {c['verdict']}")
k = json.load(open(f"{report}/kernel-cpu.json"))
say("kernel CPU to write + sync the binned FASTQ: " + ", ".join(f"{n} {v['kernel_cpu_s']:.2f} s" for n, v in k.items()))
chk("compression-costs-cpu", k["btrfs-zlib"]["kernel_cpu_s"] > k["btrfs"]["kernel_cpu_s"],
    f"btrfs-zlib cost the kernel {k['btrfs-zlib']['kernel_cpu_s']:.2f} s of CPU, plain btrfs {k['btrfs']['kernel_cpu_s']:.2f} s")
iops = {}
for r in json.load(open(f"{report}/random.json"))["results"]:
    say(f"{r['target']} {r['op']} qd{r['iodepth'] or r['threads']}: {r['metrics']['iops']['mean']:.0f} IOPS")
    if r["op"] == "randread":
        iops[r["target"].removeprefix("lab:")] = max(iops.get(r["target"].removeprefix("lab:"), 0), r["metrics"]["iops"]["mean"])
for r in json.load(open(f"{report}/streams.json"))["results"]:
    say(f"{r['target']} {r['test']} {r['op']} x{r['threads']}: {r['metrics']['throughput_Bps']['mean'] / 2**20:.0f} MiB/s")
chk("tmpfs-beats-gp3-iops", iops.get("tmpfs", 0) > iops.get("gp3", 0),
    f"random 4 KiB reads: tmpfs {iops.get('tmpfs', 0):.0f} IOPS, gp3 (emulated, 3000) {iops.get('gp3', 0):.0f} IOPS")
PY
. "$report/checks.sh"
rm "$report/checks.sh"
claims case4
finish "Case 4: filesystem compression"
