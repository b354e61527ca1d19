#!/usr/bin/env bash
# bench/tables/movielens.sh: dainx reads MovieLens' own ratings.csv (header
# and all) as a table and gets what the same tensor converted by hand gets.
#
#  1. Converts ratings.csv to DAIN TSV by hand (python3, standard library
#     only), in row order: userId and movieId as 0-based ranks of the
#     numeric IDs, day = timestamp // 86400 − min(timestamp) // 86400 (UTC),
#     the rating as written.
#  2. Checks that TSV against the shared movielens_latest_small.tsv.gz as a
#     set of lines (the shared file's lines are shuffled; values compared
#     as numbers: it writes 4.0 where Go writes 4), when that file exists.
#  3. Makes a Parquet copy of the CSV with `dainx convert` (the raw
#     timestamps as INT64, the rating as DOUBLE).
#  4. Runs `dainx augment` on the CSV and the Parquet file with
#     -index userId,movieId,timestamp:day -value rating -ids sorted, and on
#     the hand-made TSV, with the same flags (FLAGS).
#  5. Checks that the three reports agree on dims, n_train, n_val, n_test,
#     n_aug, split_fingerprint, rmse_before and rmse_after, and that the
#     augmented cells of the table runs, mapped back through the hand-made
#     dictionaries, are the TSV run's line for line.
#
# It prints a Markdown summary; with RESULT=FILE it also writes it there
# (bench/results/tables-DATE.md). Exit status 1 when a check fails.
#
# Usage: bench/tables/movielens.sh [ratings.csv]
#   RATINGS   the ratings.csv (default: the argument, else /work/ext/ratings.csv)
#   SHARED    the shared DAIN TSV (default ../shared/data/movielens_latest_small.tsv.gz)
#   DAINX     the dainx binary (default ./dainx; made by make build if missing)
#   FLAGS     augment flags (default: -layers 30,32,16 -epochs 2 -backend cpu)
#
# GroupLens' ratings.csv (ml-latest-small) may not be redistributed outside
# its license: it is not in this repository (the shared data's README says
# where it comes from and its sha256, aa289ca8…).
set -euo pipefail
cd "$(dirname "$0")/../.."
ratings=${1:-${RATINGS:-/work/ext/ratings.csv}}
shared=${SHARED:-../shared/data/movielens_latest_small.tsv.gz}
dainx=${DAINX:-./dainx}
flags=${FLAGS:--layers 30,32,16 -epochs 2 -backend cpu}
[ -f "$ratings" ] || { echo "no $ratings: give GroupLens' ml-latest-small ratings.csv" >&2; exit 1; }
if [ ! -x "$dainx" ]; then
	make build >&2
	dainx=./dainx
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# 1. By hand.
python3 - "$ratings" "$work/hand.tsv" "$work/hand-dicts.json" <<'PY'
import csv, json, sys
src, out, dicts = sys.argv[1:]
with open(src, newline="") as f:
    r = csv.reader(f)
    header = next(r)
    assert header == ["userId", "movieId", "rating", "timestamp"], header
    rows = list(r)
users = sorted({int(x[0]) for x in rows})
movies = sorted({int(x[1]) for x in rows})
u = {v: i for i, v in enumerate(users)}
m = {v: i for i, v in enumerate(movies)}
day0 = min(int(x[3]) for x in rows) // 86400
with open(out, "w") as f:
    for x in rows:
        f.write("%d\t%d\t%d\t%s\n" % (u[int(x[0])], m[int(x[1])], int(x[3]) // 86400 - day0, x[2]))
json.dump({"users": users, "movies": movies, "day0": day0}, open(dicts, "w"))
PY

# 2. Against the shared tensor, as sets of lines.
shared_check="not checked ($shared is missing)"
if [ -f "$shared" ]; then
	norm='{ printf "%s\t%s\t%s\t%s\n", $1, $2, $3, $4 + 0 }'
	if cmp -s <(gzip -dc "$shared" | awk -F'\t' "$norm" | LC_ALL=C sort) <(awk -F'\t' "$norm" "$work/hand.tsv" | LC_ALL=C sort); then
		shared_check="the same $(wc -l <"$work/hand.tsv") lines as $(basename "$shared") (as a set; values as numbers)"
	else
		shared_check="DIFFERENT from $(basename "$shared")"
	fi
fi

# 3. Parquet, by dainx convert (timestamps kept as integers).
"$dainx" convert -input "$ratings" -index userId,movieId,timestamp -value rating -output "$work/ratings.parquet" -quiet

# 4. Three runs.
table=(-index userId,movieId,timestamp:day -value rating -ids sorted)
# shellcheck disable=SC2086
/usr/bin/time -f '%e %M' -o "$work/csv.time" "$dainx" augment -input "$ratings" "${table[@]}" $flags -quiet -output "$work/aug-csv.csv" -report "$work/csv.json" >/dev/null
# shellcheck disable=SC2086
/usr/bin/time -f '%e %M' -o "$work/parquet.time" "$dainx" augment -input "$work/ratings.parquet" "${table[@]}" $flags -quiet -output "$work/aug-parquet.csv" -report "$work/parquet.json" >/dev/null
# shellcheck disable=SC2086
/usr/bin/time -f '%e %M' -o "$work/tsv.time" "$dainx" augment -input "$work/hand.tsv" $flags -quiet -output "$work/aug-tsv.tsv" -report "$work/tsv.json" >/dev/null

# 5. Compare, and the summary.
python3 - "$work" "$ratings" "$flags" "$shared_check" "$(git rev-parse --short=12 HEAD 2>/dev/null || echo '?')" "${RESULT:-}" <<'PY'
import csv, hashlib, json, os, platform, sys, datetime
work, src, flags, shared_check, commit, result = sys.argv[1:]
keys = ["dims", "n_train", "n_val", "n_test", "n_aug", "split_fingerprint", "rmse_before", "rmse_after"]
reps = {k: json.load(open(os.path.join(work, k + ".json"))) for k in ("tsv", "csv", "parquet")}
times = {k: open(os.path.join(work, k + ".time")).read().split() for k in reps}
d = json.load(open(os.path.join(work, "hand-dicts.json")))
u = {str(v): i for i, v in enumerate(d["users"])}
m = {str(v): i for i, v in enumerate(d["movies"])}
want = [l.rstrip("\n").split("\t") for l in open(os.path.join(work, "aug-tsv.tsv"))]
ok = True
cells = {}
for k in ("csv", "parquet"):
    rows = list(csv.reader(open(os.path.join(work, "aug-%s.csv" % k), newline="")))
    assert rows[0] == ["userId", "movieId", "timestamp", "rating"], rows[0]
    got = []
    for r in rows[1:]:
        t = datetime.datetime.strptime(r[2], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
        got.append([str(u[r[0]]), str(m[r[1]]), str(int(t.timestamp()) // 86400 - d["day0"]), r[3]])
    cells[k] = got == want
    ok &= cells[k]
for k in ("csv", "parquet"):
    for key in keys:
        if reps[k][key] != reps["tsv"][key]:
            ok = False
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
mem = next(int(l.split()[1]) for l in open("/proc/meminfo") if l.startswith("MemTotal")) / 2**20
sha = hashlib.sha256(open(src, "rb").read()).hexdigest()
out = []
p = out.append
p("# Tables in: MovieLens ratings.csv against its hand-made DAIN TSV\n")
p("%s, commit %s, %s; machine: %s, %d cores, %.1f GiB, load average %s at the end.\n" % (
    datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), commit, reps["tsv"].get("version", ""),
    cpu, os.cpu_count(), mem, " ".join(open("/proc/loadavg").read().split()[:3])))
p("Input: `%s` (GroupLens ml-latest-small, sha256 %s…, not in the repository). "
  "`bench/tables/movielens.sh` converted it by hand (python3: sorted IDs, days from the first day, UTC, row order); "
  "the hand-made TSV is %s. The Parquet copy was made by `dainx convert -input ratings.csv "
  "-index userId,movieId,timestamp -value rating -output ratings.parquet`.\n" % (src, sha[:16], shared_check))
p("Each run: `dainx augment %s -quiet` on the input, the table runs with `-index userId,movieId,timestamp:day -value rating -ids sorted`.\n" % flags)
p("| input | dims | n_train / n_val / n_test | n_aug | split_fingerprint | rmse_before | rmse_after | augmented cells = TSV's | seconds | peak RSS (MiB) |")
p("|---|---|---|---:|---|---:|---:|---|---:|---:|")
for k, name in (("tsv", "hand-made DAIN TSV"), ("csv", "ratings.csv"), ("parquet", "ratings.parquet")):
    r = reps[k]
    same = "—" if k == "tsv" else ("yes" if cells[k] else "**no**")
    p("| %s | %s | %d / %d / %d | %d | %s | %.10g | %.10g | %s | %s | %.0f |" % (
        name, "×".join(map(str, r["dims"])), r["n_train"], r["n_val"], r["n_test"], r["n_aug"], r["split_fingerprint"],
        r["rmse_before"], r["rmse_after"], same, times[k][0], int(times[k][1]) / 1024))
p("\n%s\n" % ("All three runs agree: the same dims, split (fingerprint), RMSEs before and after, and the same augmented cells "
               "(the table runs' IDs mapped back through the hand-made dictionaries)." if ok else "**The runs differ.**"))
text = "\n".join(out)
print(text)
if result:
    open(result, "w").write(text)
sys.exit(0 if ok else 1)
PY
