# scripts/lib.sh — what the scripts share; each sources it:
#
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"      (from scripts/)
#   . "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"   (from scripts/bench/)
#
# It sets root (the repository, absolute) and data (STREAMD_DATA, default
# ../shared/data beside the repository) and defines the helpers below. It
# changes no shell option and no directory: the script chooses (set -euo
# pipefail, cd "$root").

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
data="${STREAMD_DATA:-$root/../shared/data}"

# go_build OUT DIR PKG [go build flags…] — the one go build line: builds
# package PKG of the module in DIR into the binary OUT. Extra flags come
# before -o (-ldflags, -tags); the environment (CGO_ENABLED, GOOS) is the
# caller's.
go_build() {
  local out=$1 dir=$2 pkg=$3
  shift 3
  (cd "$dir" && go build "$@" -o "$out" "$pkg")
}

# build_streamd OUT [SRC] — builds streamd from the tree SRC (default this
# repository) into OUT.
build_streamd() {
  go_build "$1" "${2:-$root}" ./cmd/streamd
}

# build_streamd_at REV OUT — builds streamd as it was at git commit REV
# (git archive into a directory beside OUT) into OUT: the baseline of an
# A B A B comparison.
build_streamd_at() {
  local rev=$1 out=$2 src="$2.src"
  mkdir -p "$src"
  git -C "$root" archive "$rev" | tar -x -C "$src"
  build_streamd "$out" "$src"
}

# streamd_bin OUT — the streamd to run: $STREAMD_BIN when it is set and
# executable, else one built from this tree into OUT. Prints its path.
streamd_bin() {
  local bin="${STREAMD_BIN:-$1}"
  [ -x "$bin" ] || build_streamd "$bin" >&2 || return 1
  echo "$bin"
}

# workdir — sets work to a new temporary directory, removed when the
# script exits.
workdir() {
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
}

# machine — one line: the time, the CPU model and count, the load.
machine() {
  echo "date: $(date -u '+%F %T') UTC; machine: $(nproc) vCPU, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load: $(cut -d' ' -f1-3 /proc/loadavg)"
}

# rate_of REPORT — the records/s of a streamd run report's first line.
rate_of() {
  grep -m1 '^job ' <<<"$1" | sed -E 's/.*\(([0-9]+) records\/s\).*/\1/'
}

# wall_of REPORT — the wall time of a streamd run report, in seconds.
wall_of() {
  grep -m1 '^job ' <<<"$1" | sed -E 's/.* in ([0-9.]+)(m?s) .*/\1 \2/' |
    awk '{ if ($2 == "ms") print $1 / 1000; else print $1 }'
}

# keyed1m_job NAME COUNT OUT — the 1 M-key job of the checkpoint-cost
# benchmarks: a generator of COUNT records over 1 M uniform keys, 2
# channels, 1-minute windows (count, sum, max), into the CSV file OUT. The
# caller appends a checkpoint: line where it wants one.
keyed1m_job() {
  cat <<YAML
name: $1
source:
  generator: {seed: 9, count: $2, keys: 1000000, distribution: uniform, step: 10us}
event_time: {field: ts}
region:
  channels: 2
  key_by: [key]
  ops:
    - window:
        size: 1m
        aggregates: {n: count, total: sum(value), top: max(value)}
sink:
  csv: {path: $3}
YAML
}
