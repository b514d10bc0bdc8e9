# o-config (issue 14): the configuration file /etc/oomdelayfs/oomdelayfs.conf. A file naming the
# mount point, the kill mode, the ceiling and the status socket starts the daemon with no
# argument at all, and the daemon does what it says (real memory.max = L + the file's ceiling;
# status, which finds the socket from the same file, reports group mode). The command line
# wins over the file (--kill-mode kernel --ceiling 32M). A bad file (unknown key, bad value,
# broken syntax, unknown group) stops the start with exit 2 and FILE:LINE: KEY in the message,
# mounting nothing; --config with a good file starts. And the exit statuses the daemon
# returns (2 bad option, 3 not root, 4 missing mount point, 5 no cgroup2 memory controller) are
# the ones --help lists for those causes.
# timeout: 120
. /oomd/lib.sh
CONF=/etc/oomdelayfs/oomdelayfs.conf
trap 'rm -f /etc/oomdelayfs/oomdelayfs.conf' EXIT
mkdir -p /etc/oomdelayfs /shadow
SHADOW=/shadow
L=$((32 * MiB))
cg=$(mkcg c); s=/shadow${cg#$CGROOT}
cat >"$CONF" <<CONF
# written by o-config
[oomdelayfs]
mountpoint = /shadow
kill-mode = group
ceiling = 16M
status-socket = /run/o-config.sock
CONF
# the file alone: no argument
/bin/oomdelayfs >>/tmp/oomdelayfs.log 2>&1 &
DAEMON_PID=$!
wait_for 10000 _mounted /shadow || fail "no mount from the file alone: $(tail -5 /tmp/oomdelayfs.log)"
# the status server starts just after the mount is served (main.c): a moment later under load
wait_for 5000 test -S /run/o-config.sock || fail "no socket at the file's status-socket within 5 s of the mount"
setknob "$s" memory.max "$L"
setknob "$s" memory.oom_delay_millisecs 1000
real1=$(cat "$cg/memory.max")
[ "$real1" = $((L + 16 * MiB)) ] || fail "real memory.max $real1, not L + the file's 16M ceiling"
oomdelayfs status --json >/tmp/c.json || fail "status (socket from the file) exited $?"
grep -q '"kill_mode" : "group"' /tmp/c.json || fail "not group mode: $(grep kill_mode /tmp/c.json)"
stop_daemon
# the command line wins (the default file is still there)
start_daemon /shadow --kill-mode kernel --ceiling 32M
setknob "$s" memory.oom_delay_millisecs 1000
real2=$(cat "$cg/memory.max")
[ "$real2" = $((L + 32 * MiB)) ] || fail "real memory.max $real2, not L + the command line's 32M"
oomdelayfs status --json >/tmp/c.json || fail "status exited $?"
grep -q '"kill_mode" : "kernel"' /tmp/c.json || fail "the command line's kernel mode lost: $(grep kill_mode /tmp/c.json)"
stop_daemon
# Bad files are given with --config: a default file left by a scenario killed midway would
# stop every later scenario's daemon.
rm -f "$CONF"
CONF=/tmp/o-config.bad.conf
# bad files: exit 2, FILE:LINE: KEY, nothing mounted
bad() { # bad WHAT EXPECTED-TEXT: start with $CONF, expect exit 2 and the text
	/bin/oomdelayfs --config "$CONF" >/tmp/c.err 2>&1; _rc=$?
	[ "$_rc" = 2 ] || fail "$1: exit $_rc, not 2: $(cat /tmp/c.err)"
	grep -qF "$2" /tmp/c.err || fail "$1: the message lacks '$2': $(cat /tmp/c.err)"
	_mounted /shadow && fail "$1: mounted anyway"
	cat /tmp/c.err
}
printf '[oomdelayfs]\nmountpoint = /shadow\n# a comment\nkill-mood = group\n' >"$CONF"
bad "unknown key" "$CONF:4: kill-mood: unknown key"
printf '[oomdelayfs]\nmountpoint = /shadow\nceiling = lots\n' >"$CONF"
bad "bad size" "$CONF:3: ceiling: \"lots\" is not a size"
printf '[oomdelayfs]\nmountpoint = /shadow\nnice = -21\n' >"$CONF"
bad "niceness out of range" "$CONF:3: nice: \"-21\" is not a niceness between -20 and 19"
printf '[oomdelayfs]\n\nallow-other = perhaps\n' >"$CONF"
bad "bad boolean" "$CONF:3: allow-other: is not a boolean"
printf '[oomdelayfs]\nmountpoint = /shadow\nthis line is broken\n' >"$CONF"
bad "syntax" "$CONF:3: "
printf '[oomdelayfs]\nmountpoint = /shadow\n[other]\nx = 1\n' >"$CONF"
bad "unknown group" "$CONF:3: [other]: unknown group"
/bin/oomdelayfs --config /nonexistent.conf /shadow >/tmp/c.err 2>&1; mrc=$?
[ "$mrc" = 2 ] || fail "a missing --config file: exit $mrc"
# a good file given with --config
printf '[oomdelayfs]\nkill-mode = group\n' >/tmp/good.conf
start_daemon /shadow --config /tmp/good.conf
oomdelayfs status --json | grep -q '"kill_mode" : "group"' || fail "--config good file not used"
stop_daemon
# exit statuses: what the daemon returns is what --help says for that cause
oomdelayfs --help >/tmp/c.help
code_says() { # code_says CODE WORDS: --help's line for CODE contains WORDS
	grep -E "^  $1  " /tmp/c.help | grep -qF "$2" || fail "--help's exit status $1 lacks '$2': $(grep -E '^  [0-9]  ' /tmp/c.help)"
}
oomdelayfs --no-such-option /shadow >/dev/null 2>&1; r2=$?
oomdelayfs /no/such/dir >/dev/null 2>&1; r4=$?
oomdelayfs --cgroup-root /tmp /shadow >/dev/null 2>&1; r5=$?
odt asuser 1000 1000 /bin/oomdelayfs /shadow >/dev/null 2>&1; r3=$?
[ "$r2 $r3 $r4 $r5" = "2 3 4 5" ] || fail "exit statuses bad option/not root/missing mount point/not cgroup2: $r2 $r3 $r4 $r5"
code_says 2 "bad command line"
code_says 3 "not running as root"
code_says 4 "mountpoint missing"
code_says 5 "no cgroup2 mount"
pass "file alone: mounted, group mode, ceiling 16M (real max $real1); command line wins: kernel," \
	"ceiling 32M (real max $real2); 6 bad files: exit 2 with FILE:LINE: KEY; exit statuses $r2 $r3 $r4 $r5 as --help lists"
