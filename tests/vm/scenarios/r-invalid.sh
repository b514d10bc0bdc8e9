# r-invalid: every invalid write of SEMANTICS.md gets its errno (as cgroup v1 gave it) and
# changes nothing; the daemon keeps serving.
# timeout: 60
. /oomd/lib.sh
start_daemon /shadow
cg=$(mkcg i); s=/shadow${cg#$CGROOT}
setknob "$s" memory.max $((32 * MiB))
setknob "$s" memory.high $((24 * MiB))
setknob "$s" memory.oom_delay_millisecs 500
n=0
# refuse FILE VALUE ERRNO-TEXT
refuse() {
	err=$(odt write "$1" "$2" 2>&1 >/dev/null) && fail "write '$2' to ${1#/shadow} succeeded"
	case $err in *"$3"*) ;; *) fail "write '$2' to ${1#/shadow}: got '$err', expected $3" ;; esac
	n=$((n + 1))
}
for v in -1 abc "1 2" 12abc 0x " 5" 9223372036854775808 18446744073709551616 99999999999999999999999; do
	refuse "$s/memory.oom_delay_millisecs" "$v" "Invalid argument"
done
[ "$(cat "$s/memory.oom_delay_millisecs")" = 500 ] || fail "T changed to $(cat "$s/memory.oom_delay_millisecs") by invalid writes"
for v in 2 -1 x "1 1" 0x2 10; do
	refuse "$s/memory.oom_control" "$v" "Invalid argument"
done
grep -q '^oom_kill_disable 0' "$s/memory.oom_control" || fail "D changed by invalid writes"
refuse /shadow/memory.oom_control 1 "Invalid argument"
refuse /shadow/memory.oom_control 0 "Invalid argument"
for v in abc -5 "12 34" 1Q; do
	refuse "$s/memory.max" "$v" "Invalid argument"
	refuse "$s/memory.high" "$v" "Invalid argument"
done
[ "$(cat "$s/memory.max")" = $((32 * MiB)) ] || fail "L changed by invalid writes"
[ "$(cat "$s/memory.high")" = $((24 * MiB)) ] || fail "user high changed by invalid writes"
[ "$(cat "$cg/memory.max")" = $((96 * MiB)) ] || fail "real memory.max changed by invalid writes: $(cat "$cg/memory.max")"
for v in abc "3" "a 4" "3x 4"; do
	refuse "$s/cgroup.event_control" "$v" "Invalid argument"
done
refuse "$s/cgroup.event_control" "900 901" "Bad file descriptor"
# valid forms still work
odt write "$s/memory.oom_delay_millisecs" "0x10" >/dev/null || fail "0x10 refused"
[ "$(cat "$s/memory.oom_delay_millisecs")" = 16 ] || fail "0x10 read back as $(cat "$s/memory.oom_delay_millisecs")"
odt write "$s/memory.oom_delay_millisecs" "010" >/dev/null && [ "$(cat "$s/memory.oom_delay_millisecs")" = 8 ] || fail "octal 010 not 8"
printf '7\0' >"$s/memory.oom_delay_millisecs" && [ "$(cat "$s/memory.oom_delay_millisecs")" = 7 ] || fail "trailing NUL not accepted"
alive "$DAEMON_PID" || fail "daemon died"
stop_daemon
pass "$n invalid writes refused with the v1 errno, state unchanged, daemon alive"
