#!/usr/bin/env python3
"""Opcode census of one loop body in two ncu SASS source exports (`ncu --page source --csv
--print-source sass`, as lab/hopper/device.sh ncusrc writes them): the instructions whose
execution count equals EXEC (the key loop's trip count, e.g. the most frequent count), by
opcode, with their stall samples, side by side.
    python3 lab/tools/loop_ops.py A.csv B.csv [EXEC]
Without EXEC, the count that the most executed instructions share in A is taken."""
import collections
import csv
import sys


def load(path):
    rows = list(csv.reader(open(path)))
    hdr = rows[1]
    idx = {h: k for k, h in enumerate(hdr)}
    return [r for r in rows[2:] if len(r) >= len(hdr)], idx


def census(path, exec_count):
    data, idx = load(path)
    ops, samples = collections.Counter(), collections.Counter()
    for r in data:
        if int(r[idx["Instructions Executed"]] or 0) != exec_count:
            continue
        words = r[1].strip().split()
        op = words[1] if words[0].startswith("@") else words[0]
        ops[op] += 1
        samples[op] += int(r[idx["Warp Stall Sampling (All Samples)"]] or 0)
    return ops, samples


def busiest_count(path):
    data, idx = load(path)
    weight = collections.Counter()
    for r in data:
        ex = int(r[idx["Instructions Executed"]] or 0)
        weight[ex] += ex
    return weight.most_common(1)[0][0]


a, b = sys.argv[1], sys.argv[2]
exec_count = int(sys.argv[3]) if len(sys.argv) > 3 else busiest_count(a)
(oa, sa), (ob, sb) = census(a, exec_count), census(b, exec_count)
print(f"loop body (executed {exec_count} times): {sum(oa.values())} instructions in A, {sum(ob.values())} in B")
for op in sorted(set(oa) | set(ob), key=lambda k: -abs(ob[k] - oa[k])):
    if oa[op] != ob[op]:
        print(f"{op:28} A {oa[op]:4} B {ob[op]:4}   samples {sa[op]:6} -> {sb[op]:6}")
