import numpy as np, symgrad as sg
la=sg.linalg
rng=np.random.default_rng(0)
X=rng.normal(size=(3,3))
x=sg.placeholder('x',(3,3))
S = sg.matmul(x, sg.transpose(x)) + 3*np.eye(3)
L = la.cholesky(S)
y = sg.reduce_sum(sg.log(sg.diag_part(L)))  # 0.5 logdet
h, = sg.hessians(y, [x])
H = sg.evaluate(h, {x: X})
# fd of gradient
g, = sg.gradients(y, [x])
eps=1e-5; Hfd=np.zeros((3,3,3,3))
for idx in np.ndindex(3,3):
    E=np.zeros((3,3)); E[idx]=eps
    Hfd[(...,)+idx] = (sg.evaluate(g,{x:X+E})-sg.evaluate(g,{x:X-E}))/(2*eps)
print("hess", np.abs(H-Hfd).max())
# jvp
T=rng.normal(size=(3,3))
j, = sg.jvp([y],[x],[T])
print("jvp", sg.evaluate(j,{x:X}), np.sum(sg.evaluate(g,{x:X})*T))
# eigh second order
e,v = la.eigh(S)
y2 = sg.reduce_sum(e**2) + sg.reduce_sum(v**2*X)
h2, = sg.hessians(y2,[x]); g2,=sg.gradients(y2,[x])
H2=sg.evaluate(h2,{x:X})
for idx in np.ndindex(3,3):
    E=np.zeros((3,3)); E[idx]=eps
    Hfd[(...,)+idx] = (sg.evaluate(g2,{x:X+E})-sg.evaluate(g2,{x:X-E}))/(2*eps)
print("hess eigh", np.abs(H2-Hfd).max())
# parallel
f=sg.function([x],[y,g],target='parallel'); print("par", np.abs(f(X)[1]-sg.evaluate(g,{x:X})).max())
# forward accumulator
xv = sg.Variable(X)
with sg.ForwardAccumulator(xv, T) as acc:
    yy = sg.reduce_sum(sg.log(sg.diag_part(la.cholesky(sg.matmul(xv, sg.transpose(xv)) + 3*np.eye(3)))))
print("acc", acc.jvp(yy).numpy())
# tape
with sg.GradientTape() as tape:
    yy = sg.reduce_sum(sg.log(sg.diag_part(la.cholesky(sg.matmul(xv, sg.transpose(xv)) + 3*np.eye(3)))))
print("tape", np.abs(tape.gradient(yy, xv).numpy()-sg.evaluate(g,{x:X})).max())
# errors
a=sg.placeholder('a',(3,3)); bad=-np.eye(3); sing=np.zeros((3,3))
for name, t, val in [("chol", la.cholesky(a), bad), ("inv", la.inv(a), sing), ("solve", la.solve(a, np.ones((3,1))), sing), ("tri", la.triangular_solve(a, np.ones((3,1))), sing)]:
    for eng in ["eval","cpu","parallel"]:
        try:
            if eng=="eval": sg.evaluate(t,{a:val})
            else: sg.function([a],t,target=eng)(val)
            print(name, eng, "NO ERROR")
        except sg.LinAlgError as exc: print(name, eng, "|", exc)
    try:
        la.cholesky(sg.Variable(bad)) if name=="chol" else None
    except sg.LinAlgError as exc: print("eager", exc)
