#!/usr/bin/env bash
# What a full reproduction of the four papers costs: the CPU time (user + system) of one seed
# of each full sweep, run in process on one thread, times the sweep's number of seeds.
#
#   analysis/reproduction_cost.sh [ARMADA] [SWEEP ...]
#
# ARMADA is the armada binary to time (default: target/debug/armada, the README's build);
# SWEEP names under sweeps/ (default: every full sweep behind the papers' figures and
# tables). Prints one line per sweep and the total; each sweep runs in a scratch directory,
# removed afterwards. Run it on an otherwise idle machine: CPU time is what is measured,
# but a busy machine's shared caches still lengthen it. The CDT sweeps' MovieLens settings
# need the ratings first (`python3 analysis/fetch_movielens.py`); a sweep with a failed job
# stops the script with armada's message.
set -euo pipefail
cd "$(dirname "$0")/.."
armada=${1:-target/debug/armada}
shift || true
sweeps=("$@")
if [ ${#sweeps[@]} -eq 0 ]; then
  sweeps=(lse-fig3 lse-fig4 lse-fig5 lse-finite
          safe-fig2 safe-fig4 safe-fig5 safe-fig6
          cdt-main cdt-table4 cdt-grid cdt-sim-refcode cdt-switching cdt-yahoo cdt-lipcheck cdt-ablation
          bocvs-fig1)
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
total=0
printf '%-18s %12s %6s %10s\n' sweep "CPU s/seed" seeds CPU-hours
for name in "${sweeps[@]}"; do
  file=sweeps/$name.toml
  seeds=$(sed -n 's/^seeds *= *\([0-9][0-9]*\).*/\1/p' "$file" | head -1)
  if [ -z "$seeds" ]; then
    echo "$file: no 'seeds = N' line" >&2
    exit 2
  fi
  sed 's/^seeds *= *[0-9][0-9]*/seeds = 1/' "$file" > "$scratch/$name.toml"
  if ! /usr/bin/time -f '%U %S' -o "$scratch/time" \
    "$armada" run --in-process --jobs 1 --quiet --dashboard off --out "$scratch/out" "$scratch/$name.toml" \
    > "$scratch/log" 2>&1; then
    cat "$scratch/log" >&2
    exit 1
  fi
  read -r user system < "$scratch/time"
  line=$(awk -v u="$user" -v s="$system" -v n="$seeds" 'BEGIN { c = u + s; printf "%.1f %.3f", c, c * n / 3600 }')
  read -r per_seed hours <<< "$line"
  printf '%-18s %12s %6s %10s\n' "$name" "$per_seed" "$seeds" "$hours"
  total=$(awk -v t="$total" -v h="$hours" 'BEGIN { printf "%.3f", t + h }')
  rm -rf "$scratch/out"
done
printf '%-18s %12s %6s %10s\n' total "" "" "$total"
