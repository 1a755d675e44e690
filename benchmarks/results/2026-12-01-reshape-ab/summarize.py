import json,statistics as st,glob,sys
d=sys.argv[1] if len(sys.argv)>1 else '/tmp/ab'
def spread(xs):
    xs=sorted(xs); return f"{st.median(xs):.1f} [{xs[0]:.1f}–{xs[-1]:.1f}] (n={len(xs)})"
res={}
for v in ('old','new'):
    cpu=[];p99=[];rps=[]
    for f in sorted(glob.glob(f'{d}/w16-{v}-*.json')):
        j=json.load(open(f))
        for ph in j['phases']:
            if ph['kind']=='proxy' and ph['errors']==0:
                cpu.append(ph['cpu_ns_per_frame']); p99.append(ph['p99_ms']); rps.append(ph['roundtrips_per_sec'])
    lg=[];lc=[];lp=[]
    for f in sorted(glob.glob(f'{d}/hs-{v}-*.json')):
        j=json.load(open(f))
        for t in j['trials']:
            if t['failed']==0:
                lg.append(t['accepted_per_sec']); lc.append(t['proxy_cpu_us_per_login']); lp.append(t['p99_ms'])
    res[v]=dict(cpu=cpu,p99=p99,rps=rps,lg=lg,lc=lc,lp=lp)
    print(f"{v}: w16 proxy CPU ns/frame {spread(cpu)}; w16 p99 ms {spread(p99)}; w16 roundtrips/s {spread(rps)}")
    print(f"{v}: handshake logins/s {spread(lg)}; CPU us/login {spread(lc)}; p99 ms {spread(lp)}")
for k,name in (('cpu','w16 CPU/frame'),('p99','w16 p99'),('lg','logins/s'),('lc','CPU/login')):
    print(f"new/old {name}: {st.median(res['new'][k])/st.median(res['old'][k]):.3f}")
