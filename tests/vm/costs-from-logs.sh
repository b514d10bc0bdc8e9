#!/bin/sh
# costs-from-logs.sh BUILD_DIR: prints, from the serial logs of a run of scripts/test.sh (or of
# run-vm.sh and run-sd.sh) in BUILD_DIR, the cost tables that shard.sh deals boots by: one line
# "scenario seconds" per scenario, the longest it took on any kernel, for tests/vm/costs (VM
# scenarios) and tests/sd/costs (sd scenarios), from the runners' "<scenario> took N s" lines.
# Usage: tests/vm/costs-from-logs.sh build-ci   (then copy each table over the file it names)
set -eu
B=${1:?usage: $0 BUILD_DIR}
[ -d "$B/vm" ] || [ -d "$B/sd" ] || { echo "costs-from-logs: $B has neither vm/ nor sd/ logs" >&2; exit 2; }
echo "== tests/vm/costs"
cat "$B"/vm/serial-*.log 2>/dev/null | tr -d '\r' | sed -n 's/^oomd-vm: \([^ ]*\) took \([0-9]*\) s$/\1 \2/p' |
	awk '$2 > m[$1] { m[$1] = $2 } END { for (s in m) print s, m[s] }' | sort
echo "== tests/sd/costs"
cat "$B"/sd/serial-*.log 2>/dev/null | tr -d '\r' | sed -n 's/^oomd-sd: \([^ ]*\) took \([0-9]*\) s$/\1 \2/p' |
	awk '$2 > m[$1] { m[$1] = $2 } END { for (s in m) print s, m[s] }' | sort
