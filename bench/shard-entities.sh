#!/usr/bin/env bash
# bench/shard-entities.sh: what sharding the embedding tables by row saves
# each rank on a tensor with many entities. The 2M-cell tensor of the
# entity sweep with 2 001 000 entities (make bench-scale caches it as
# bench/scale-data/entities-1000000x1000000x1000-2M.bin) is run by one
# process and under mpiexec -n 2 and -n 4 with -shard-tables off and on,
# all with sparse-adam; each run's largest rank peak RSS, its peak per
# stage, seconds and the SHA-256 of the augmented cells go into
# bench/results/dist-entities-DATE.md.
#
# Usage: bench/shard-entities.sh [mpiexec launcher, default mpiexec.mpich]
set -euo pipefail
cd "$(dirname "$0")/.."
launcher=${1:-mpiexec.mpich}
in=bench/scale-data/entities-1000000x1000000x1000-2M.bin
[ -f "$in" ] || { echo "no $in: run make bench-scale (its entity sweep makes it)" >&2; exit 1; }
[ -x ./dainx ] || { echo "no ./dainx: make build" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flags=(-backend cpu -layers 48,64,32 -epochs 1 -embedding-optimizer sparse-adam -quiet)
/usr/bin/time -f %M -o "$work/one.rss" ./dainx augment -input "$in" -output "$work/one.bin" -report "$work/one.json" "${flags[@]}" >/dev/null
for n in 2 4; do
	for s in off on; do
		$launcher -n $n ./dainx augment -dist mpi -shard-tables $s -input "$in" -output "$work/n$n-$s.bin" -report "$work/n$n-$s.json" "${flags[@]}" >/dev/null
	done
done
out=bench/results/dist-entities-$(date -u +%Y-%m-%dT%H%M).md
python3 - "$work" "$in" "$launcher" "$(git rev-parse --short=12 HEAD)" > "$out" <<'PY'
import hashlib, json, os, sys, platform
work, src, launcher, commit = sys.argv[1:]
def sha(p):
    return hashlib.sha256(open(p, 'rb').read()).hexdigest()[:16]
cpu = next((l.split(':', 1)[1].strip() for l in open('/proc/cpuinfo') if l.startswith('model name')), platform.processor())
mem = next(int(l.split()[1]) for l in open('/proc/meminfo') if l.startswith('MemTotal')) / 2**20
one = json.load(open(os.path.join(work, 'one.json')))
print(f"# Sharded embedding tables, many entities: {one.get('version', '')}\n")
print(f"Commit {commit}; machine: {cpu}, {os.cpu_count()} cores, {mem:.1f} GiB. Input `{src}` (dims {one['dims']}, {one['nnz']} cells, {sum(one['dims'])} entities), "
      f"`dainx augment -backend cpu -layers 48,64,32 -epochs 1 -embedding-optimizer sparse-adam`, under `{launcher} -n P … -dist mpi -shard-tables off|on`.\n")
print("| run | largest rank peak (MiB) | ranks' peak at the end of split / train / augment / retrain (MiB, largest rank) | seconds | test RMSE before → after | cells SHA-256 (16) |")
print("|---|---:|---|---:|---|---|")
onerss = int(open(os.path.join(work, 'one.rss')).read().split()[-1]) / 1024
print(f"| one process | {onerss:.0f} | | {one['seconds']['total']:.1f} | {one['rmse_before']:.4f} → {one['rmse_after']:.4f} | {sha(os.path.join(work, 'one.bin'))} |")
for n in (2, 4):
    for s in ('off', 'on'):
        r = json.load(open(os.path.join(work, f'n{n}-{s}.json')))
        ranks = r['dist']['per_rank']
        big = max(ranks, key=lambda x: x['peak_rss_mib'])
        after = ' / '.join(f"{big['peak_rss_mib_after'][st]:.0f}" for st in ('split', 'train', 'augment', 'retrain'))
        print(f"| -n {n}, -shard-tables {s} | {big['peak_rss_mib']:.0f} | {after} | {r['seconds']['total']:.1f} | {r['rmse_before']:.4f} → {r['rmse_after']:.4f} | {sha(os.path.join(work, f'n{n}-{s}.bin'))} |")
print("\nWith the tables sharded each rank holds 1/P of every embedding table and its Adam state; the cells must be those of the replicated run (same SHA-256). "
      "Runs with more ranks than cores are oversubscribed: their seconds measure memory, not speed.")
PY
echo "wrote $out"
