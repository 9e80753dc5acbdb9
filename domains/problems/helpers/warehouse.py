# Helper for the warehouse problem, run inside the sandbox before the generated code.
import z3 as _z3

_POSITIONS = [
    (1, 7),
    (4, 8),
    (8, 8),
    (2, 4),
    (6, 5),
    (9, 3),
    (3, 1),
    (7, 1),
    (5, 3),
    (0, 2),
    (5, 0),
]


def _fllm_dist(a, b):
    (x1, y1), (x2, y2) = _POSITIONS[a], _POSITIONS[b]
    return abs(x1 - x2) + abs(y1 - y2)


def get_distance(station_1, station_2):
    """Distance between two stations (10 is the origin); ints or Z3 Int expressions."""
    if isinstance(station_1, int) and isinstance(station_2, int):
        return _z3.RealVal(_fllm_dist(station_1, station_2))
    result = _z3.RealVal(0)
    for a in range(len(_POSITIONS)):
        for b in range(len(_POSITIONS)):
            result = _z3.If(
                _z3.And(station_1 == a, station_2 == b), _z3.RealVal(_fllm_dist(a, b)), result
            )
    return result
