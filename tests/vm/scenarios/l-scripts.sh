# l-scripts (issue 4, deliverable 6; the synthetic files' table): what a shell script with
# echo/cat sees on the shadow tree (v2 layout). Values, formats, and the errno of bad input
# (as the kernel's kstrtoull(buf, 0) and v1's memory.oom_control answered).
# Registrations from a C client: a trailing newline or NUL is accepted, a control fd that is
# not this cgroup's memory.oom_control is refused with EINVAL.
# Figures: the number of checks.
# timeout: 60
. /oomd/lib.sh
start_daemon /shadow
cg=$(mkcg s); s=/shadow${cg#$CGROOT}
setknob "$s" cgroup.subtree_control +memory
mkdir "$s/c" || fail "shadow mkdir c"
n=0
# wr FILE STRING: echo STRING > FILE in a shell; prints ok or the errno name from its message
wr() {
	_m=$(sh -c 'echo "$2" >"$1"' _ "$1" "$2" 2>&1) && { echo ok; return; }
	case $_m in
	*"Invalid argument"*) echo EINVAL ;; *"Bad file descriptor"*) echo EBADF ;;
	*"Permission denied"*) echo EACCES ;; *"No such device"*) echo ENODEV ;;
	*"Operation not permitted"*) echo EPERM ;; *) echo "other: $_m" ;;
	esac
}
# wrn FILE STRING: the same with printf (no newline); wr0: with a trailing NUL
wrn() { sh -c 'printf "%s" "$2" >"$1"' _ "$1" "$2" 2>/dev/null && echo ok || echo err; }
wr0() { sh -c 'printf "%s\0" "$2" >"$1"' _ "$1" "$2" 2>/dev/null && echo ok || echo err; }
expect() { # expect WHAT GOT WANT
	n=$((n + 1))
	[ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
}
d=$s/memory.oom_delay_millisecs
o=$s/memory.oom_control
ec=$s/cgroup.event_control
expect "cat delay (fresh)" "$(cat "$d")" 0
expect "echo 500 > delay" "$(wr "$d" 500)" ok
expect "cat delay" "$(cat "$d")" 500
expect "delay inherited by the child (set on every descendant)" "$(cat "$s/c/memory.oom_delay_millisecs")" 500
expect "echo 0x10 > delay" "$(wr "$d" 0x10)" ok
expect "0x10 reads" "$(cat "$d")" 16
expect "echo 010 > delay (octal)" "$(wr "$d" 010)" ok
expect "010 reads" "$(cat "$d")" 8
expect "printf 300 (no newline)" "$(wrn "$d" 300)" ok
expect "300 reads" "$(cat "$d")" 300
expect "printf '301\\0' (trailing NUL)" "$(wr0 "$d" 301)" ok
expect "301 reads" "$(cat "$d")" 301
expect "echo -1 > delay" "$(wr "$d" -1)" EINVAL
expect "echo abc > delay" "$(wr "$d" abc)" EINVAL
expect "echo '' > delay" "$(wr "$d" '')" EINVAL
expect "echo '5 5' > delay" "$(wr "$d" '5 5')" EINVAL
expect "echo 9223372036854775808 > delay (above LONG_MAX)" "$(wr "$d" 9223372036854775808)" EINVAL
expect "echo 18446744073709551616 > delay (above 2^64)" "$(wr "$d" 18446744073709551616)" EINVAL
expect "delay unchanged after bad writes" "$(cat "$d")" 301
expect "cat oom_control" "$(cat "$o" | tr '\n' ,)" "oom_kill_disable 0,under_oom 0,oom_kill 0,"
expect "echo 1 > oom_control" "$(wr "$o" 1)" ok
expect "cat oom_control after 1" "$(cat "$o" | tr '\n' ,)" "oom_kill_disable 1,under_oom 0,oom_kill 0,"
expect "D is not inherited by an existing child" "$(sed -n 's/^oom_kill_disable //p' "$s/c/memory.oom_control")" 0
expect "echo 2 > oom_control" "$(wr "$o" 2)" EINVAL
expect "echo -1 > oom_control" "$(wr "$o" -1)" EINVAL
expect "echo x > oom_control" "$(wr "$o" x)" EINVAL
expect "echo 0x0 > oom_control" "$(wr "$o" 0x0)" ok
expect "cat oom_control after 0x0" "$(sed -n 's/^oom_kill_disable //p' "$o")" 0
expect "echo 1 > root oom_control" "$(wr /shadow/memory.oom_control 1)" EINVAL
expect "cat root oom_control (exists)" "$(sed -n 's/^oom_kill_disable //p' /shadow/memory.oom_control)" 0
expect "cgroup.event_control mode" "$(ls -l "$ec" | cut -c1-10)" "--w--w--w-"
expect "echo abc > cgroup.event_control" "$(wr "$ec" abc)" EINVAL
expect "echo '1000 1001' > cgroup.event_control (no such fds)" "$(wr "$ec" '1000 1001')" EBADF
expect "echo '0 1' > cgroup.event_control (not an eventfd)" "$(wr "$ec" '0 1')" EINVAL
expect "echo '5' > cgroup.event_control (no control fd)" "$(wr "$ec" '5')" EINVAL
rd=$(cat "$ec" 2>&1 >/dev/null); rdok=$?
expect "cat cgroup.event_control (as cgroupfs: opens, the read fails)" "$(case $rd in *"read error: Invalid argument"*) echo EINVAL ;; *) echo "$rd" ;; esac)" EINVAL
# registrations from a C client (v1listener): line endings, wrong control files
reg() { # reg ARGS...: "ok" if v1listener registered, else the errno it printed
	_o=$(v1listener "$s" --timeout 50 "$@" 2>&1)
	case $_o in registered*) echo ok ;; *) echo "${_o##* }" ;; esac
}
expect "register '<efd> <cfd>'" "$(reg)" ok
expect "register '<efd> <cfd>\\n'" "$(reg --line-end nl)" ok
expect "register '<efd> <cfd>\\0'" "$(reg --line-end nul)" ok
expect "register with the control fd opened write-only (root: v1 checks inode permission only)" "$(reg --control-wronly)" ok
expect "register with a child's memory.oom_control as the control fd" "$(reg --control "$s/c/memory.oom_control")" EINVAL
expect "register with the shadow memory.events as the control fd" "$(reg --control "$s/memory.events")" EINVAL
expect "register with the real memory.events as the control fd" "$(reg --control "$cg/memory.events")" EINVAL
rootreg=$(v1listener /shadow --timeout 50 2>&1 | head -n 1)
# a child made in the real tree inherits T (rule 7)
mkdir "$cg/r" || fail "real mkdir r"
wait_for 10000 sh -c "[ \"\$(cat $s/r/memory.oom_delay_millisecs 2>/dev/null)\" = 301 ]" || fail "real child r has T $(cat "$s/r/memory.oom_delay_millisecs"), not 301"
n=$((n + 1))
rmdir "$s/r" "$s/c" || fail "shadow rmdir"
stop_daemon
pass "$n checks of echo/cat on memory.oom_delay_millisecs, memory.oom_control, cgroup.event_control and of registrations (line ends, wrong control files);" \
	"cat cgroup.event_control as root: ${rd:-no error (exit $rdok)}; registration on the root cgroup: $rootreg"
