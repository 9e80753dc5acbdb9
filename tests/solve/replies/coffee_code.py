# ruff: noqa: F821 - runs in the sandbox, where z3 names and the problem data are defined
solver = Optimize()
light_coffee_needed_for_cafe["cafe1"] = math.ceil(light_coffee_needed_for_cafe["cafe1"] * 1.23)
suppliers = list(capacity_in_supplier)
roasteries = list(roasting_cost_light)
cafes = list(light_coffee_needed_for_cafe)
beans = {(s, r): Int(f"beans_{s}_{r}") for s in suppliers for r in roasteries}
light = {(r, c): Int(f"light_{r}_{c}") for r in roasteries for c in cafes}
dark = {(r, c): Int(f"dark_{r}_{c}") for r in roasteries for c in cafes}
for v in [*beans.values(), *light.values(), *dark.values()]:
    solver.add(v >= 0)
for s in suppliers:
    solver.add(Sum([beans[s, r] for r in roasteries]) <= capacity_in_supplier[s])
for r in roasteries:
    solver.add(
        Sum([beans[s, r] for s in suppliers]) == Sum([light[r, c] + dark[r, c] for c in cafes])
    )
for c in cafes:
    solver.add(Sum([light[r, c] for r in roasteries]) >= light_coffee_needed_for_cafe[c])
    solver.add(Sum([dark[r, c] for r in roasteries]) >= dark_coffee_needed_for_cafe[c])
total_cost = Int("total_cost")
solver.add(
    total_cost
    == Sum(
        [shipping_cost_from_supplier_to_roastery[k] * beans[k] for k in beans]
        + [
            roasting_cost_light[r] * light[r, c] + roasting_cost_dark[r] * dark[r, c]
            for r in roasteries
            for c in cafes
        ]
        + [
            shipping_cost_from_roastery_to_cafe[r, c] * (light[r, c] + dark[r, c])
            for r in roasteries
            for c in cafes
        ]
    )
)
solver.minimize(total_cost)
