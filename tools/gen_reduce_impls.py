#!/usr/bin/env python3
"""Prints the `reduce_impl!` invocations of src/shape/reduce.rs: one per rank (1..=6) and non-empty subset of axes,
in increasing order. Paste the output over the invocation block when the pattern changes."""
from itertools import combinations

NAMES = "ABCDEF"
for r in range(1, 7):
    d = list(NAMES[:r])
    for k in range(1, r + 1):
        for sub in combinations(range(r), k):
            axes = f"Axis<{sub[0]}>" if k == 1 else "(" + ", ".join(f"Axis<{i}>" for i in sub) + ")"
            out = [d[i] for i in range(r) if i not in sub]
            keep = ["Const<1>" if i in sub else d[i] for i in range(r)]
            print(f"reduce_impl!([{' '.join(d)}] {axes} => [{' '.join(out)}] keep [{', '.join(keep)}] "
                  f"axes [{' '.join(map(str, sub))}]);")
