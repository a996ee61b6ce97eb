# Session 29: simulate tail schedules from call 1's per-SM tile times (d128 2048, run 1). Each
# block b has its SM's tile time t_b; a piece of k of nb key blocks costs t_b·k/nb + c0 (fixed
# cost per item, fitted to session 28's stamps: 6.1 µs for 2 of 16 blocks at t=26.9 -> c0 ≈ 2.7)
# plus the merge on the tile's last piece (≈ 4.5 µs at P=8); a draw costs `draw` µs.
import heapq, sys, statistics
sys.path.insert(0, "."); from per_sm import load
import glob
f = sorted(glob.glob("r/stamps_1_*.gz"))[0]
per_sm = load(f)
import gzip, re
lines = gzip.open(f, "rt").read().splitlines()
sms = [int(x) for x in re.findall(r"-?\d+", lines[2].split(":", 1)[1])]
t = [per_sm[s] for s in sms]  # per block
G, T, nb = 132, 4096, 16
c0, merge = 2.7, 4.5
def run(static_rounds, P, draw):
    # blocks finish their static rounds, then draw items: whole tiles (T - static_rounds*G - rem... )
    rem = T % G
    whole = T - static_rounds * G - rem  # drawn whole tiles
    items = [("tile", None)] * whole + [("piece", i) for i in range(rem) for _ in range(P)]
    free = [(static_rounds * t[b], b) for b in range(G)]
    heapq.heapify(free)
    arrivals = {}
    end = max(x for x, _ in free)
    for kind, tile in items:
        at, b = heapq.heappop(free)
        at += draw
        if kind == "tile":
            fin = at + t[b]
        else:
            fin = at + t[b] * (nb / P) / nb + c0
            arrivals.setdefault(tile, []).append(fin)
        heapq.heappush(free, (fin, b))
        end = max(end, fin)
    for tile, fins in arrivals.items():
        end = max(end, max(fins) + merge * P / 8)
    return end
def static_now(P):
    rem = T % G
    ends = [31 * t[b] for b in range(G)]
    last = max(ends)
    for i in range(rem):
        fins = [31 * t[b] + t[b] / P + c0 for b in range(i * P, (i + 1) * P)]
        last = max(last, max(fins) + merge * P / 8)
    return last
print("static 31 rounds, fixed pieces P=8 (HEAD):  %.1f" % static_now(8))
for sr in (31, 30, 29):
    for P in (8, 16):
        for draw in (0.5, 1.5):
            print("static %d rounds, drawn rest, P=%d, draw %.1f µs: %.1f" % (sr, P, draw, run(sr, P, draw)))
print("ideal (work / SMs): %.1f" % (T * statistics.mean(t) / G))
