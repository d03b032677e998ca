# Shared by the case scripts (examples/cases/case*.sh); sourced, not run.
#
# Every case script: `caseN_*.sh [--full] [WORK_DIR]`. It sets `mode` (short|full), `work` (WORK_DIR, default a new
# directory under $TMPDIR), `report` ($work/report, where every page goes and index.html links them), `iolens`
# (an array: $IOLENS_CMD, default `iolens`), and gives:
#   lab_up TARGET...   bring up the lab targets the case needs (reused when IOLENS_LAB_DIR already has them up and
#                      healthy; else a lab in $work/lab, taken down when the script exits)
#   check NAME OK MSG  print "PASS: NAME: MSG" or "FAIL: NAME: MSG" (OK is 0/1 or true/false); failures are counted
#   on_exit CMD        run CMD when the script exits (the lab comes down last)
#   missing MSG        say exactly what is missing for a part of the case ("MISSING: ...") without faking it
#   claims CASE        test the published claims of CASE on this run's results (examples/cases/claims.py): one
#                      REPRODUCED / NOT REPRODUCED / UNDECIDED line each, claims.json and claims.html in $report;
#                      a checked claim that is not reproduced counts as a failure
#   CMD | save_table FILE [tee]
#                      save CMD's text table in FILE under a first line stating its width ("# width: N columns,
#                      nothing cut", or that a cell was cut, marked "…"); with tee, show the table too
#   finish TITLE       write $report/index.html (every page, JSON and log in $report, and the check lines), print
#                      where it is, and exit 1 when any check failed
#
# Saved text tables (`iolens ... | save_table $report/NAME.txt`): output that is not a terminal is laid out at the width its
# tables need, nothing left out or cut; COLUMNS is unset here so that a narrow terminal's value cannot narrow them.
set -euo pipefail
unset COLUMNS
mode=short
if [ "${1:-}" = "--full" ]; then mode=full; shift; fi
case_name=$(basename "$0" .sh)
cases_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=${1:-$(mktemp -d "${TMPDIR:-/tmp}/iolens-$case_name.XXXXXX")}
report=$work/report
mkdir -p "$report"
work=$(cd "$work" && pwd)
report=$work/report
read -r -a iolens <<<"${IOLENS_CMD:-iolens}"
checks=$report/checks.txt
: > "$checks"
failures=0
_cleanups=()
_run_cleanups() {
  local i
  for ((i = ${#_cleanups[@]} - 1; i >= 0; i--)); do eval "${_cleanups[i]}" || true; done
}
trap _run_cleanups EXIT
on_exit() {  # on_exit 'COMMAND': run it when the script exits (last registered, first run)
  _cleanups+=("$1")
}

need_root() {
  [ "$(id -u)" = 0 ] || { echo "$case_name: needs root (the lab's loop devices and mounts): run it with sudo" >&2; exit 2; }
}

need_tool() {  # need_tool PROGRAM DEBIAN_PACKAGE
  command -v "$1" >/dev/null || { echo "$case_name: $1 is not installed (Debian package $2)" >&2; exit 2; }
}

_lab_healthy() {  # every named target is up and healthy in $IOLENS_LAB_DIR
  "${iolens[@]}" lab status --json 2>/dev/null | python3 -c '
import json, sys
by = {t["name"]: t for t in json.load(sys.stdin)["targets"]}
sys.exit(0 if all(n in by and by[n]["status"] == "up" and by[n]["healthy"] for n in sys.argv[1:]) else 1)' "$@"
}

lab_up() {
  need_root
  if [ -n "${IOLENS_LAB_DIR:-}" ] && _lab_healthy "$@"; then
    echo "lab: using $IOLENS_LAB_DIR ($*)"
    return
  fi
  export IOLENS_LAB_DIR=$work/lab
  local only
  only=$(IFS=,; echo "$*")
  on_exit '"${iolens[@]}" lab down -q'
  "${iolens[@]}" lab up --only "$only" --size "${LAB_SIZE:-512M}" --disk-size "${LAB_DISK_SIZE:-512M}" -q
  _lab_healthy "$@" || { echo "$case_name: lab targets not healthy: $("${iolens[@]}" lab status)" >&2; exit 2; }
}

check() {  # check NAME OK MESSAGE
  local word=FAIL
  case "$2" in 1|true|True) word=PASS ;; esac
  [ "$word" = PASS ] || failures=$((failures + 1))
  echo "$word: $1: $3" | tee -a "$checks"
}

missing() {
  echo "MISSING: $*" | tee -a "$checks"
}

claims() {  # claims CASE
  local rc=0
  python3 "$cases_dir/claims.py" check "$1" "$report" > "$report/claims.txt" || rc=$?
  cat "$report/claims.txt"
  cat "$report/claims.txt" >> "$checks"
  [ "$rc" = 0 ] || failures=$((failures + 1))
}

finish() {  # finish TITLE
  python3 - "$report" "$1" "$mode" <<'PY'
import html, sys
from pathlib import Path
report, title, mode = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
pages = sorted(p for p in report.rglob("*") if p.is_file() and p.name != "index.html")
checks = (report / "checks.txt").read_text().splitlines()
rows = "".join(f"<li><a href=\"{html.escape(str(p.relative_to(report)))}\">{html.escape(str(p.relative_to(report)))}"
               f"</a></li>\n" for p in pages)
lines = "".join(f"<li class=\"{html.escape(c.split(':', 1)[0].lower().replace(' ', '-'))}\">{html.escape(c)}</li>\n"
                for c in checks)
claims = (report / "claims.html").read_text().split("<title>claims</title>", 1)[-1] if (report / "claims.html").exists() else ""
(report / "index.html").write_text(
    f"<!doctype html><html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
    "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}.pass{color:#070}.fail{color:#b00}"
    ".missing{color:#850}.reproduced{color:#070}.not-reproduced{color:#b00}.undecided{color:#850}"
    "td,th{border:1px solid #ccc;padding:.3em;vertical-align:top}table{border-collapse:collapse}</style></head><body>"
    f"<h1>{html.escape(title)}</h1><p>mode: {html.escape(mode)}; see docs/cases.md for the published figures."
    f"</p>{'<h2>Published beside ours</h2>' + claims if claims else ''}<h2>Checks</h2><ul>{lines}</ul><h2>Pages</h2><ul>{rows}</ul></body></html>\n")
PY
  echo "report: $report/index.html"
  if [ "$failures" -gt 0 ]; then echo "$case_name: $failures check(s) failed" >&2; exit 1; fi
}

save_table() {  # CMD | save_table FILE [tee]
  python3 -c '
import sys
text = sys.stdin.buffer.read().decode("utf-8", "replace")
width = max((len(line) for line in text.splitlines()), default=0)
cut = "some cell cut to fit (marked …)" if "…" in text else "nothing cut"
with open(sys.argv[1], "w", encoding="utf-8") as f:
    f.write(f"# width: {width} columns, {cut}\n{text}")
if sys.argv[2:] == ["tee"]:
    sys.stdout.buffer.write(text.encode())' "$@"
}

synth() {  # synth DIR ARGS...: synthetic inputs, made once per work directory
  local d=$1; shift
  [ -f "$d/reads_2.fq.gz" ] || "${iolens[@]}" data synth -o "$d" "$@" >/dev/null
}
