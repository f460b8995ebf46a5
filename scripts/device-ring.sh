#!/usr/bin/env bash
# device-ring.sh DIR — run the ring and sched benchmarks on a many-core
# machine that has no Go toolchain, from prebuilt test binaries:
#
#   CGO_ENABLED=0 go test -c -o DIR/ring.test ./ring
#   CGO_ENABLED=0 go test -c -o DIR/sched.test ./sched
#   scripts/device-ring.sh DIR
#
# Prints the machine, the usable CPU set as sched sees it, then the
# benchmarks: producer and consumer pinned to two distinct physical cores
# (ring vs Go channel, round trip, pinned vs unpinned), then the ring and
# round trip on two SMT siblings of one core when the machine has them.
# Total run time stays under about 90 s (each step has its own timeout).
set -u
dir=${1:?usage: device-ring.sh DIR (holding ring.test and sched.test)}
ring=$dir/ring.test
schedt=$dir/sched.test
for f in "$ring" "$schedt"; do
	[ -x "$f" ] || { echo "missing or not executable: $f" >&2; exit 2; }
done
start=$(date +%s)

echo "== machine"
date -u '+%Y-%m-%d %H:%M:%S UTC'
grep -m1 'model name' /proc/cpuinfo || true
echo "online cpus: $(cat /sys/devices/system/cpu/online 2>/dev/null) nproc: $(nproc)"
uname -r

echo "== usable cpu set (sched.Detect)"
timeout 10 "$schedt" -test.run '^TestDetect$' -test.v 2>&1 | grep 'cpus:' || echo "(TestDetect failed)"

# Choose two CPUs: cpu a = the first allowed CPU; b = the first allowed CPU
# on another physical core of the same package; s = an SMT sibling of a.
allowed=$(awk '/Cpus_allowed_list/ {print $2}' /proc/self/status)
expand() { # "0-3,8" -> "0 1 2 3 8"
	local IFS=,
	for r in $1; do
		case $r in *-*) seq "${r%-*}" "${r#*-}" ;; *) echo "$r" ;; esac
	done
}
cpus=$(expand "$allowed" | tr '\n' ' ')
topo=/sys/devices/system/cpu
a=$(echo "$cpus" | awk '{print $1}')
core_of() { cat "$topo/cpu$1/topology/core_id" 2>/dev/null || echo "$1"; }
pkg_of() { cat "$topo/cpu$1/topology/physical_package_id" 2>/dev/null || echo 0; }
b="" s=""
for c in $cpus; do
	[ "$c" = "$a" ] && continue
	if [ "$(pkg_of "$c")" = "$(pkg_of "$a")" ]; then
		if [ "$(core_of "$c")" = "$(core_of "$a")" ]; then
			[ -z "$s" ] && s=$c
		elif [ -z "$b" ]; then
			b=$c
		fi
	fi
done
[ -z "$b" ] && b=$(echo "$cpus" | awk '{print $2}')
echo "pair: cpu $a (core $(core_of "$a")) and cpu $b (core $(core_of "$b")); SMT sibling of $a: ${s:-none}"

echo "== ring vs channel, two physical cores ($a,$b)"
STREAMD_BENCH_CPUS=$a,$b timeout 45 "$ring" -test.run '^$' \
	-test.bench 'Transfer|RoundTrip|Pinning' -test.benchtime 1s 2>&1 |
	grep -E '^(Benchmark|cpu:|PASS|FAIL|ok)|panic' || echo "(ring benchmarks failed or timed out)"

if [ -n "$s" ]; then
	echo "== ring, SMT siblings ($a,$s)"
	STREAMD_BENCH_CPUS=$a,$s timeout 15 "$ring" -test.run '^$' \
		-test.bench 'Transfer/ring|RoundTrip/atomic' -test.benchtime 1s 2>&1 |
		grep -E '^Benchmark|panic' || echo "(sibling benchmarks failed or timed out)"
fi

echo "== sched"
timeout 10 "$schedt" -test.run '^$' -test.bench . -test.benchtime 1s 2>&1 |
	grep -E '^Benchmark|panic' || echo "(sched benchmarks failed or timed out)"

echo "== done in $(( $(date +%s) - start )) s"
