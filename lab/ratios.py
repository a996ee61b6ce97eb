import json,re,sys
d=sys.argv[1]
def load(p):
    try: return json.load(open(p))['results']
    except FileNotFoundError: return []
res=load(d+'/bench_torch.json')+load(d+'/decode/bench_torch.json')
ours={}
for l in open(d+'/medians_auto.txt'):
    m=re.match(r'cuda_fused_attn_bf16/b(\d+)_h(\d+)_kv(\d+)_q(\d+)_k(\d+)_d(\d+)(_causal)? ([\d.]+) us',l)
    if m:
        k=tuple(int(x) for x in m.groups()[:6])+(m.group(7) is not None,)
        ours[k]=float(m.group(8))
tab={}
for r in res:
    if r['status']!='ok': continue
    # A bottom-right causal mask given to torch as an explicit mask (decode sq > 1) is causal.
    k=tuple(r['shape'])+(r['causal'] or r.get('mask','none')!='none',)
    tab.setdefault(k,{})[r['backend']]=r['median_us']
print("| (B,H,Hkv,Sq,Sk,D) | causal | ours µs | ours TF/s | cuDNN µs | FA2 µs | ours/cuDNN | ours/FA2 |")
print("|---|---|---|---|---|---|---|---|")
for k,v in tab.items():
    o=ours.get(k)
    if o is None: continue
    b,h,hk,sq,sk,dd,c=k
    fl=4*b*h*sq*sk*dd*(0.5 if c else 1)
    cu=v.get('cudnn'); fa=v.get('flash')
    print(f"| ({b},{h},{hk},{sq},{sk},{dd}) | {'yes' if c else 'no'} | {o:.1f} | {fl/o/1e6:.0f} | {cu:.1f} | {fa:.1f} | {cu/o:.2f} | {fa/o:.2f} |")
