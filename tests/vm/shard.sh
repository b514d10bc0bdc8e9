# shard.sh - sourced by run-vm.sh and tests/sd/run-sd.sh: deals scenarios out to the boots of one
# kernel so that the boots take about as long as each other (CI's whole run within 45 minutes,
# issue 19: the host's two VM slots run the boots of both suites, and the run ends when the last
# boot does).
#
# shard_deal N COSTS PINNED SCENARIOS: prints N lines, line i the scenarios of boot i, each line
# in the order SCENARIOS gives them (an empty line for a boot with none). PINNED (space-separated,
# may be empty) all go to boot 1 ("# runs first"); the others are dealt longest first, each to the
# boot with the least time so far (LPT). COSTS is a file of "scenario seconds" lines (# comments),
# the seconds a scenario took in CI on its slowest kernel; a scenario it does not list counts
# SHARD_DEFAULT_S (20) seconds. Never fails: a missing COSTS file counts every scenario the same.
SHARD_DEFAULT_S=20
shard_deal() {
	_sd_n=$1 _sd_costs=$2 _sd_pinned=$3
	shift 3
	# shellcheck disable=SC2016
	echo "$@" | tr ' ' '\n' | grep -v '^$' | awk -v n="$_sd_n" -v pinned=" $_sd_pinned " \
		-v costs="$_sd_costs" -v dflt="$SHARD_DEFAULT_S" '
		BEGIN {
			while ((getline line < costs) > 0) {
				sub(/#.*/, "", line)
				if (split(line, f, " ") >= 2) cost[f[1]] = f[2] + 0
			}
		}
		{ name[NR] = $1; c[NR] = ($1 in cost) ? cost[$1] : dflt }
		END {
			for (b = 1; b <= n; b++) load[b] = 0
			for (i = 1; i <= NR; i++)
				if (index(pinned, " " name[i] " ")) { boot[i] = 1; load[1] += c[i]; done[i] = 1 }
			# longest first, each to the least loaded boot (ties: the lower number)
			for (k = 1; k <= NR; k++) {
				best = 0
				for (i = 1; i <= NR; i++)
					if (!done[i] && (best == 0 || c[i] > c[best])) best = i
				if (best == 0) break
				min = 1
				for (b = 2; b <= n; b++) if (load[b] < load[min]) min = b
				boot[best] = min; load[min] += c[best]; done[best] = 1
			}
			for (b = 1; b <= n; b++) {
				line = ""
				for (i = 1; i <= NR; i++) if (boot[i] == b) line = line (line == "" ? "" : " ") name[i]
				print line
			}
		}'
}
