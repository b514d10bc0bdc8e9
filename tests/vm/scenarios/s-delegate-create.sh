# s-delegate-create (issue 10, deliverable 7): open(2) with O_CREAT through the shadow answers
# what cgroupfs answers, as the delegated owner (uid 1000) and as root: O_CREAT|O_EXCL on an
# existing name (real or synthetic) EEXIST, on a new name EACCES (kernfs has no create), O_CREAT
# without O_EXCL on an existing file opens it only with the file's permission (memory.oom_control
# stays root's: EACCES for uid 1000), and no file appears in the real tree. Each errno is compared
# with the one the real cgroupfs gives for the same call.
# timeout: 60
. /oomd/lib.sh
start_daemon /shadow
U=1000
cg=$(mkcg cr); s=/shadow${cg#$CGROOT}
delegate "$cg" "$U"
# same WHO NAME_SHADOW NAME_REAL FLAGS WANT: the shadow's errno equals the real tree's and WANT
same() {
	if [ "$1" = root ]; then _r=$(odt open "$cg/$3" "$4"); _s=$(odt open "$s/$2" "$4")
	else _r=$(odt asuser "$U" "$U" odt open "$cg/$3" "$4"); _s=$(odt asuser "$U" "$U" odt open "$s/$2" "$4")
	fi
	[ "$_r" = "$5" ] || fail "$1: open($3, $4) on the real tree gave $_r, this scenario expects $5"
	[ "$_s" = "$_r" ] || fail "$1: open($2, $4) through the shadow gave $_s, the real tree $_r"
	n=$((n + 1))
}
n=0
for who in root user; do
	same $who cgroup.procs cgroup.procs creat,excl,wronly EEXIST
	same $who memory.oom_control memory.max creat,excl,wronly EEXIST
	same $who memory.oom_delay_millisecs memory.max creat,excl,rdonly EEXIST
	same $who new.$who new.$who creat,excl,wronly EACCES
	same $who new2.$who new2.$who creat,wronly EACCES
done
same user memory.oom_control memory.max creat,wronly EACCES
same root memory.oom_control memory.max creat,wronly ok
same user cgroup.procs cgroup.procs creat,wronly ok
ls "$cg" | grep -q '^new' && fail "a file appeared in the real tree: $(ls "$cg" | grep '^new')"
stop_daemon
pass "$n open(O_CREAT) cases as root and uid $U: EEXIST on existing names, EACCES on new ones and on" \
	"root's oom_control without O_EXCL, each as the real cgroupfs answers"
