# The STAMP lines of calls 4-5 (lab branch s35-decode-stamps) grouped into launches: a launch is
# a run of stamps whose starts lie within 20 µs of its first. `key` picks a row's start time.
import gzip


def launches(path, parse, key):
    rows = [parse(line.split()) for line in gzip.open(path, "rt") if line.startswith("STAMP")]
    rows.sort(key=key)
    groups, cur = [], [rows[0]]
    for r in rows[1:]:
        if key(r) - key(cur[0]) > 20000:
            groups.append(cur)
            cur = [r]
        else:
            cur.append(r)
    groups.append(cur)
    return groups
