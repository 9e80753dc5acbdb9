# ruff: noqa: F821 - runs in the sandbox, where z3 names and the problem data are defined
solver = Optimize()
# Query: Gu works at most 6 days.
works = {(w, d): Bool(f"works_{w}_{d}") for w in availability for d in work_requirement}
for (w, d), v in works.items():
    if d not in availability[w]:
        solver.add(Not(v))
for d, need in work_requirement.items():
    solver.add(Sum([If(works[w, d], 1, 0) for w in availability]) == need)
solver.add(Sum([If(works["Gu", d], 1, 0) for d in work_requirement]) <= 6)
total_cost = Int("total_cost")
solver.add(total_cost == Sum([If(v, worker_pay[w], 0) for (w, d), v in works.items()]))
solver.minimize(total_cost)
