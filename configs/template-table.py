#!/usr/bin/env python3
# template-table.py — summarises template-designer runs on templates/cups.c
# from their RUN/spade.db (docs/selfplay.md, "A base that reads the hint"):
# validity in the first and last 10 iterations, regret and pass rates of the
# valid environments, the cups value of the valid fillings of the last 10
# (the last whole number of the cups hole, clamped to 1..60 as RESET does)
# and the designer reward. Reads only; not a plot (spade report draws those).
# Usage: python3 configs/template-table.py [--pooled] RUN_DIR...
#   --pooled: one summary over all the runs' environments (seeds pooled).
import math, re, sqlite3, statistics, sys

def wilson(k, n, z=1.96):
    if n == 0:
        return (float('nan'),) * 2
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return c - h, c + h

def cups_of(src):
    m = re.search(r'CUPS\[\] = "(.*?)\\\n', src, re.S)
    nums = re.findall(r'\d+', m.group(1)) if m else []
    return max(1, min(60, int(nums[-1]))) if nums else 0

def load(run):
    db = sqlite3.connect('file:%s/spade.db?mode=ro' % run, uri=True)
    db.text_factory = lambda b: b.decode('utf-8', 'replace')  # sampled fillings need not be UTF-8
    last = db.execute('select max(iteration) from envs').fetchone()[0]
    rows = db.execute('select id, iteration - %d, gate, source, pass_nohint, pass_hint, regret, reward from envs' % (last + 1)).fetchall()
    plays = {}
    for e, kn, kh in db.execute('select env_id, success_nohint, success_hint from plays'):
        plays.setdefault(e, []).append((kn, kh))
    # ids made unique across runs; iterations counted back from the end (-1 the last)
    key = abs(hash(run)) % 1000003 * 10000000
    return [(key + r[0],) + r[1:] for r in rows], {key + e: v for e, v in plays.items()}, last

def summary(runs):
    rows, plays, last = [], {}, None
    for run in runs:
        r, p, l = load(run)
        rows += r
        plays.update(p)
        last = l if last is None else min(last, l)
    rows = [(r[0], r[1] + last + 1) + r[2:] for r in rows]
    first = [r for r in rows if r[1] < 10]
    late = [r for r in rows if r[1] > last - 10]
    valid = [r for r in rows if r[2] == '']
    vlate = [r for r in late if r[2] == '']
    out = {'run': ' '.join(runs), 'iterations': last + 1}
    out['valid_first10'] = '%d/%d' % (sum(r[2] == '' for r in first), len(first))
    out['valid_last10'] = '%d/%d' % (len(vlate), len(late))
    gates = {}
    for r in late:
        if r[2]:
            gates[r[2]] = gates.get(r[2], 0) + 1
    out['failed_last10'] = ', '.join('%s %d' % kv for kv in sorted(gates.items(), key=lambda kv: -kv[1]))
    for name, sel in (('all', valid), ('last10', vlate)):
        reg = [r[6] for r in sel if r[6] is not None]
        if reg:
            m = statistics.mean(reg)
            se = statistics.stdev(reg) / math.sqrt(len(reg)) if len(reg) > 1 else float('nan')
            q = statistics.quantiles(reg, n=4) if len(reg) > 1 else [reg[0]] * 3
            out['regret_' + name] = '%.3f +- %.3f (n %d; quartiles %.2f %.2f %.2f; >0 %d, <0 %d)' % (
                m, 1.96 * se, len(reg), q[0], q[1], q[2], sum(x > 1e-9 for x in reg), sum(x < -1e-9 for x in reg))
        pl = [x for r in sel for x in plays.get(r[0], [])]
        if pl:
            kn, kh, n = sum(x[0] for x in pl), sum(x[1] for x in pl), len(pl)
            a, b = wilson(kn, n)
            c, d = wilson(kh, n)
            out['pass_' + name] = 'no hint %.3f [%.3f, %.3f], hint %.3f [%.3f, %.3f] (%d plays an arm)' % (kn / n, a, b, kh / n, c, d, n)
    hist = {}
    for r in vlate:
        c = cups_of(r[3])
        hist[c] = hist.get(c, 0) + 1
    out['cups_last10'] = ' '.join('%d:%d' % kv for kv in sorted(hist.items()))
    hall = {}
    for r in valid:
        hall[cups_of(r[3])] = hall.get(cups_of(r[3]), 0) + 1
    out['cups_all'] = ' '.join('%d:%d' % kv for kv in sorted(hall.items()))
    if vlate:
        out['cups_last10_median'] = statistics.median(cups_of(r[3]) for r in vlate)
    byc = {}
    for r in valid:
        if r[6] is not None:
            byc.setdefault('1-2' if cups_of(r[3]) <= 2 else '3-9' if cups_of(r[3]) < 10 else '10+', []).append(r[6])
    out['regret_by_cups'] = ', '.join('%s: %.3f (n %d)' % (k, statistics.mean(v), len(v)) for k, v in sorted(byc.items()))
    rew = [r[7] for r in late if r[7] is not None]
    rewv = [r[7] for r in vlate if r[7] is not None]
    rewf = [r[7] for r in first if r[7] is not None]
    out['reward'] = 'first10 %.3f, last10 %.3f (valid ones last10 %.3f)' % (
        statistics.mean(rewf) if rewf else float('nan'), statistics.mean(rew) if rew else float('nan'),
        statistics.mean(rewv) if rewv else float('nan'))
    return out

args = sys.argv[1:]
groups = [args[1:]] if args[:1] == ['--pooled'] else [[a] for a in args]
for g in groups:
    for k, v in summary(g).items():
        print('%-20s %s' % (k, v))
    print()
