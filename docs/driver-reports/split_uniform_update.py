#!/usr/bin/env python3
# Usage: python3 docs/driver-reports/split_uniform_update.py FILE.sass ...  (the text of
# `cuobjdump -sass`, one instruction a line). Prints, per file, the in-place uniform updates that
# a split warp may run once per group (workaround 17, docs/driver-reports/README.md section 5).
"""A CFG check of SASS for the pattern behind workaround 17: a uniform instruction that updates
a UR in place (UIADD3 UR6, UR6, 0x1f20) whose previous write to that UR comes before a
conditional branch (a point where the warp may split) with no BSYNC / WARPSYNC.ALL / BAR
between that branch and it. Each group of a split warp then applies the update once more.
Branches next to a BRX (the batch kernel's `block_idx == j` dispatch: block-uniform), `@UP`
branches and those over a lone BPT.TRAP are taken as uniform. ULEA URd, URcga, URd, 0x18
(CgaCtaId << 24, 0 without clusters) is not counted as an update."""
import re,sys
line_re=re.compile(r'/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;')
def parse(f):
    return [(int(m.group(1),16),m.group(2)) for l in open(f) for m in [line_re.search(l)] if m]
def dest_src(ins):
    m=re.match(r'(@!?U?P\w+\s+)?(U[A-Z0-9.]+|S2UR)\s+(.*)',ins)
    if not m: return None,[]
    args=[a.strip() for a in m.group(3).split(',')]
    d=args[0] if re.fullmatch(r'UR\d+',args[0]) else None
    srcs=[r for a in args[1:] for r in re.findall(r'UR\d+',a)]
    if m.group(2)=='ULEA' and args[-1]=='0x18' and len(args)>2 and args[2]==d: srcs=[]
    if m.group(2).startswith(('UMOV','ULDC','S2UR','VOTEU')): srcs=[]
    return d,srcs
def run(f):
    I=parse(f); idx={a:i for i,(a,_) in enumerate(I)}
    brx=[a for a,x in I if x.startswith('BRX')]
    preds={i:[] for i in range(len(I))}; cond_branch=set()
    for i,(a,x) in enumerate(I):
        m=re.match(r'(@(!?)(U?P\w+)\s+)?BRA(\.\w+)*\s+0x([0-9a-f]+)',x)
        uncond_end = (m and not m.group(1)) or x.startswith(('EXIT','BRX','RET'))
        if i+1<len(I) and not uncond_end: preds[i+1].append(i)
        if m:
            t=idx.get(int(m.group(5),16))
            if t is not None: preds[t].append(i)
            skip=[y for b,y in I[i+1:t]] if t is not None and t>i else []
            uniform=(m.group(3) or '').startswith('UP') or any(abs(a-b)<=0x80 for b in brx) or (len(skip)==1 and skip[0].startswith('BPT.TRAP'))
            if m.group(1) and not uniform: cond_branch.add(i)
    hits=[]
    for i,(a,x) in enumerate(I):
        d,srcs=dest_src(x)
        if not d or d not in srcs: continue
        # backward DFS: (instruction index, crossed a possible split without a sync since)
        seen=set(); stack=[(p,(p in cond_branch)) for p in preds[i]]; bad=None
        while stack:
            j,split=stack.pop()
            if (j,split) in seen: continue
            seen.add((j,split))
            y=I[j][1]
            if y.startswith(('BSYNC','WARPSYNC.ALL','BAR')) and not split: continue  # the warp met again after the def
            dj,_=dest_src(y)
            ws={dj} if dj else set()
            if dj and '.64' in y.split()[0 if not y.startswith('@') else 1]: ws.add('UR%d'%(int(dj[2:])+1))
            if d in ws:
                if split: bad=I[j]; break
                continue
            for p in preds[j]: stack.append((p, split or p in cond_branch))
        if bad: hits.append('%04x %s   (UR last written at %04x %s)'%(a,x,bad[0],bad[1]))
    return hits
for f in sys.argv[1:]:
    h=run(f); print(f, len(h)); [print('    ',x) for x in h[:6]]
