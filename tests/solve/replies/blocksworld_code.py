# ruff: noqa: F821 - runs in the sandbox, where z3 names and the problem data are defined
# Instance: b on c, c on a, a on the table, b clear, arm empty; goal: b on a, c on b.
solver = Optimize()
blocks = ["a", "b", "c"]
steps = range(T + 1)
on = {(x, y, t): Bool(f"on_{x}_{y}_{t}") for x in blocks for y in blocks for t in steps}
ontable = {(x, t): Bool(f"ontable_{x}_{t}") for x in blocks for t in steps}
clear = {(x, t): Bool(f"clear_{x}_{t}") for x in blocks for t in steps}
holding = {(x, t): Bool(f"holding_{x}_{t}") for x in blocks for t in steps}
handempty = {(t,): Bool(f"handempty_{t}") for t in steps}
pickup = {(x, t): Bool(f"pickup_{x}_{t}") for x in blocks for t in range(T)}
putdown = {(x, t): Bool(f"putdown_{x}_{t}") for x in blocks for t in range(T)}
stack = {(x, y, t): Bool(f"stack_{x}_{y}_{t}") for x in blocks for y in blocks for t in range(T)}
unstack = {
    (x, y, t): Bool(f"unstack_{x}_{y}_{t}") for x in blocks for y in blocks for t in range(T)
}
init_on = {("b", "c"), ("c", "a")}
for x in blocks:
    for y in blocks:
        solver.add(on[x, y, 0] == ((x, y) in init_on))
    solver.add(ontable[x, 0] == (x == "a"))
    solver.add(clear[x, 0] == (x == "b"))
    solver.add(Not(holding[x, 0]))
solver.add(handempty[(0,)])
for t in range(T):
    for x in blocks:
        solver.add(
            Implies(
                pickup[x, t],
                And(
                    clear[x, t],
                    ontable[x, t],
                    handempty[(t,)],
                    holding[x, t + 1],
                    Not(clear[x, t + 1]),
                    Not(ontable[x, t + 1]),
                    Not(handempty[(t + 1,)]),
                ),
            )
        )
        solver.add(
            Implies(
                putdown[x, t],
                And(
                    holding[x, t],
                    clear[x, t + 1],
                    ontable[x, t + 1],
                    handempty[(t + 1,)],
                    Not(holding[x, t + 1]),
                ),
            )
        )
        for y in blocks:
            if x == y:
                solver.add(Not(stack[x, y, t]), Not(unstack[x, y, t]))
                continue
            solver.add(
                Implies(
                    stack[x, y, t],
                    And(
                        holding[x, t],
                        clear[y, t],
                        handempty[(t + 1,)],
                        clear[x, t + 1],
                        on[x, y, t + 1],
                        Not(clear[y, t + 1]),
                        Not(holding[x, t + 1]),
                    ),
                )
            )
            solver.add(
                Implies(
                    unstack[x, y, t],
                    And(
                        on[x, y, t],
                        clear[x, t],
                        handempty[(t,)],
                        holding[x, t + 1],
                        clear[y, t + 1],
                        Not(on[x, y, t + 1]),
                        Not(clear[x, t + 1]),
                        Not(handempty[(t + 1,)]),
                    ),
                )
            )
    acts = (
        [pickup[x, t] for x in blocks]
        + [putdown[x, t] for x in blocks]
        + [stack[x, y, t] for x in blocks for y in blocks]
        + [unstack[x, y, t] for x in blocks for y in blocks]
    )
    solver.add(PbEq([(a, 1) for a in acts], 1))
update_data(solver)
solver.add(on["b", "a", T], on["c", "b", T])
