. /oomd/lib.sh
start_daemon /shadow
cg=$(mkcg d); s=/shadow${cg#$CGROOT}
echo "cat: [$(cat $s/memory.max)]"
echo "dd: [$(dd if=$s/memory.max bs=100 count=1 2>/dev/null)]"
echo "read: [$(read x < $s/memory.max; echo $x)]"
echo "cat cur: [$(cat $s/memory.current)]"
echo "dd cur: [$(dd if=$s/memory.current bs=100 count=1 2>/dev/null)]"
echo "dd ctl: [$(dd if=$s/memory.oom_control bs=100 count=1 2>/dev/null)]"
pass dbg
