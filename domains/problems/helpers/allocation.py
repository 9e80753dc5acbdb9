# Helper for the task-allocation problem, run inside the sandbox before the generated code.
import z3 as _z3


def Max(variable_list):
    """The largest of a list of numbers or Z3 expressions, as a Z3 expression."""
    items = list(variable_list)
    best = items[0]
    for item in items[1:]:
        best = _z3.If(item > best, item, best)
    return best
