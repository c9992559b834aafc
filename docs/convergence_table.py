# Prints the table of docs/CONVERGENCE.md from the traces written by docs/convergence.sh.
import csv, json, os
O='/tmp/b4'
names={'b1':'B1 bilateral_network (32×32 net)','b2':'B2 sphere_pile (1000)','b3':'B3 plate_stack (20 plates, 1:1000)','b4':'B4 wrecking_ball (735 bricks, step 230)','bib1000':'balls_in_box 1000','bib4000':'balls_in_box 4000'}
print('| problem | rows | solver | iter to 1e-4 | s to 1e-4 | iter to 1e-6 | s to 1e-6 | final residual (iterations) |')
print('|---|---:|---|---:|---:|---:|---:|---|')
for c in ['b1','b2','b3','b4','bib1000','bib4000']:
    d=os.path.join(O,c)
    if not os.path.exists(os.path.join(d,'check.json')): continue
    pj=[f for f in os.listdir(d) if f.startswith('problem_')][0]
    p=json.load(open(os.path.join(d,pj)))
    rows=sum(3 if isinstance(x,dict) and 'coulomb' in x else (x['bilateral']['dim'] if isinstance(x,dict) else 1) for x in p['cones'])
    for s in ['jacobi','pgs','spg','apgd']:
        t=list(csv.DictReader(open(os.path.join(d,'trace',s+'.csv'))))
        def first(th):
            for r in t:
                if float(r['residual'])<=th: return r['iteration'], '%.3f'%float(r['time_s'])
            return '—','—'
        a=first(1e-4); b=first(1e-6)
        last=t[-1]
        best=min(float(r['residual']) for r in t)
        print(f"| {names[c]} | {rows} | {s} | {a[0]} | {a[1]} | {b[0]} | {b[1]} | {best:.1e} ({last['iteration']}) |")
