import heapq
def sim(order, sms=132, over=0.5):
    h=[(0.0,i) for i in range(sms)]
    for c in order:
        t,i=heapq.heappop(h); heapq.heappush(h,(t+c+over,i))
    return max(t for t,_ in h)
costs=[1,3,4,6,7,9,10,12,13,15,16]  # shifted, top..bottom
H=256
for over in (0.5,1.0):
    perhead=[c for h in range(H) for c in reversed(costs)]
    ideal=sum(c+over for c in perhead)/132
    print('over',over,'ideal',round(ideal,1),'per-head heavy-first',round(sim(perhead,over=over),1))
    for G in (8,16,32,64,256):
        order=[]
        for g in range(0,H,G):
            for c in reversed(costs):
                order += [c]*min(G,H-g)
        print('  group',G,round(sim(order,over=over),1))
print('----')
def row(name,H,costs,slots=132,over=0.5):
    perhead=[c for h in range(H) for c in reversed(costs)]
    ideal=sum(c+over for c in perhead)/slots
    base=sim(perhead,sms=slots,over=over)
    res=[]
    for G in (8,16,32):
        order=[]
        for g in range(0,H,G):
            for c in reversed(costs):
                order += [c]*min(G,H-g)
        res.append((G,round(sim(order,sms=slots,over=over)/base,3)))
    print(name,'ideal/base',round(ideal/base,3),res)
row('d64 2048',256,[1,3,4,6,7,9,10,12,13,15,16])
row('d128 2048',256,list(range(1,17)))
row('4096',128,list(range(1,33)))
row('16k',32,list(range(1,129)))
row('d256 2048 (80-key blocks)',256,[ (128*(i+1)+79)//80 for i in range(16)])
print('==== rule G=ceil(k*132/tiles)')
import math
def row2(name,H,costs,over=0.5):
    perhead=[c for h in range(H) for c in reversed(costs)]
    ideal=sum(c+over for c in perhead)/132
    base=sim(perhead,over=over)
    out=[]
    for k in (1,2,3):
        G=math.ceil(k*132/len(costs)); order=[]
        for g in range(0,H,G):
            for c in reversed(costs):
                order += [c]*min(G,H-g)
        out.append((k,G,round(sim(order,over=over)/base,3)))
    print(name, round(ideal/base,3), out)
row2('d64 2048',256,[1,3,4,6,7,9,10,12,13,15,16])
row2('d128 2048',256,list(range(1,17)))
row2('4096',128,list(range(1,33)))
row2('16k',32,list(range(1,129)))
row2('d256',256,[ (128*(i+1)+79)//80 for i in range(16)])
row2('gqa 4096',128,list(range(1,33)))
print('#### balanced groups')
def order_bal(H,costs,G0):
    ng=max(1,round(H/G0)); order=[]
    for g in range(ng):
        lo=g*H//ng; hi=(g+1)*H//ng
        for c in reversed(costs): order += [c]*(hi-lo)
    return order
def row3(name,H,costs,over=0.5):
    perhead=[c for h in range(H) for c in reversed(costs)]
    ideal=sum(c+over for c in perhead)/132
    base=sim(perhead,over=over)
    out=[]
    for G0 in (8,12,16,24,32):
        out.append((G0,round(sim(order_bal(H,costs,G0),over=over)/base,3)))
    print(name, round(ideal/base,3), out)
for over in (0.5,2.0):
  print('over',over)
  row3('d64 2048',256,[1,3,4,6,7,9,10,12,13,15,16],over)
  row3('d128 2048',256,list(range(1,17)),over)
  row3('4096',128,list(range(1,33)),over)
  row3('16k',32,list(range(1,129)),over)
  row3('d256',256,[ (128*(i+1)+79)//80 for i in range(16)],over)
  row3('odd 1000 d128 H=40',40,list(range(1,9)),over)
  row3('b2 h12 3000',24,list(range(1,25)),over)
print('&&&& remainder-first groups')
def order_rf(H,costs,G):
    G=min(G,H); ng=-(-H//G); r=H-(ng-1)*G; sizes=[r]+[G]*(ng-1); order=[]
    for s in sizes:
        for c in reversed(costs): order += [c]*s
    return order
def row4(name,H,costs,over=0.5):
    perhead=[c for h in range(H) for c in reversed(costs)]
    ideal=sum(c+over for c in perhead)/132
    base=sim(perhead,over=over)
    print(name, round(ideal/base,3), [(G,round(sim(order_rf(H,costs,G),over=over)/base,3)) for G in (8,12,16,24,32)])
for over in (0.5,2.0):
  print('over',over)
  row4('d64 2048',256,[1,3,4,6,7,9,10,12,13,15,16],over)
  row4('d128 2048',256,list(range(1,17)),over)
  row4('4096',128,list(range(1,33)),over)
  row4('16k',32,list(range(1,129)),over)
  row4('d256',256,[ (128*(i+1)+79)//80 for i in range(16)],over)
  row4('odd 1000 d128 H=40',40,list(range(1,9)),over)
  row4('b2 h12 3000',24,list(range(1,25)),over)
  row4('b3 h20 2048',60,list(range(1,17)),over)
