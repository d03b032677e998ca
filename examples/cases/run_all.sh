#!/usr/bin/env bash
# Every case of the field notes in one command: brings up one lab with every target the cases need, runs the five
# case scripts in it (short mode, or --full), takes the lab down, and writes WORK_DIR/index.html: per case, the
# published claims beside ours (examples/cases/claims.py), with the case's time and report, and WORK_DIR/claims.md,
# the same tables in Markdown (`claims.py markdown WORK_DIR docs/cases.md` puts them in the docs). Exits non-zero
# when any case failed.
#
# Usage (as root): examples/cases/run_all.sh [--full] [WORK_DIR]
# Environment: IOLENS_CMD (default iolens), CASES (a subset, e.g. "case2 case4").
set -euo pipefail
full=()
if [ "${1:-}" = "--full" ]; then full=(--full); shift; fi
here=$(cd "$(dirname "$0")" && pwd)
read -r -a iolens <<<"${IOLENS_CMD:-iolens}"
command -v "${iolens[0]}" >/dev/null || {
  echo "run_all: ${iolens[0]} is not on PATH: activate the environment (. .venv/bin/activate); through sudo, keep" \
       "its PATH: sudo env PATH=\"\$PATH\" $0" >&2; exit 2; }
work=${1:-$(mktemp -d "${TMPDIR:-/tmp}/iolens-cases.XXXXXX")}
mkdir -p "$work"
work=$(cd "$work" && pwd)
[ "$(id -u)" = 0 ] || { echo "run_all: needs root (the lab's loop devices and mounts): run it as root, or with sudo env PATH=\"\$PATH\" $0 so that iolens is still found" >&2; exit 2; }
cases=${CASES:-case1 case2 case3 case4 case5}
targets=tmpfs,ext4,xfs,btrfs,btrfs-lzo,btrfs-zstd,btrfs-zlib,s3,s3-rclone,s3-remote,netfs,magnetic,gp2,gp3,io2-100,io2-500,st1,st1:125G,nvme
export IOLENS_LAB_DIR=$work/lab
# up front: what the S3 targets (case 1, case 3) need that is not installed yet, and how long installing takes
echo "run_all: the S3 targets need an S3 server and toxiproxy built with Go by \`iolens lab install\`:"
"${iolens[@]}" lab install --dry-run | sed 's/^/  /' || true
trap '"${iolens[@]}" lab down -q || true' EXIT
"${iolens[@]}" lab up --only "$targets" --size "${LAB_SIZE:-512M}" --disk-size "${LAB_DISK_SIZE:-512M}" -q
failed=()
: > "$work/cases.tsv"
echo "${full[*]:-short} mode, started $(date -u '+%Y-%m-%d %H:%M UTC'), load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)" \
  > "$work/run.txt"
for c in $cases; do
  script=$(ls "$here/$c"_*.sh)
  echo "== $(basename "$script") ${full[*]}"
  start=$(date +%s)
  if "$script" "${full[@]}" "$work/$c" 2>&1 | tee "$work/$c.log"; then status=ok; else status=FAILED; failed+=("$c"); fi
  printf '%s\t%s\t%s\t%s\n' "$c" "$status" "$(( $(date +%s) - start ))" "$(cut -d' ' -f1 /proc/loadavg)" >> "$work/cases.tsv"
done
sed -i "1s/\$/; at the end: $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%H:%M UTC')/" "$work/run.txt"
python3 "$here/claims.py" index "$work"
python3 "$here/claims.py" markdown "$work" > "$work/claims.md"
echo "report: $work/index.html"
[ ${#failed[@]} -eq 0 ] || { echo "run_all: failed: ${failed[*]}" >&2; exit 1; }
