# The PyTorch "Benchmarking with torch.utils.benchmark" recipe: Timer with globals, setup, labels and
# num_threads, timeit and blocked_autorange, Measurement statistics, and a Compare table over sizes. Times are
# the machine's (under `_` keys); the compared part is what the timed statements compute and how the
# measurements are organised.
# compat-tolerance: 1e-5 1e-6
import json

import numpy as np
import torch
import torch.utils.benchmark as benchmark


def batched_dot_mul_sum(a, b):
    return a.mul(b).sum(-1)


def batched_dot_bmm(a, b):
    a = a.reshape(-1, 1, a.shape[-1])
    b = b.reshape(-1, b.shape[-1], 1)
    return torch.bmm(a, b).flatten(-3)


rng = np.random.default_rng(11)
results, values = [], {}
for n in (8, 64):
    x = torch.from_numpy(rng.normal(size=(n, 32)).astype(np.float32))
    assert torch.allclose(batched_dot_mul_sum(x, x), batched_dot_bmm(x, x), rtol=1e-5)
    values[n] = batched_dot_bmm(x, x)[:4].tolist()
    for stmt, label in (("batched_dot_mul_sum(x, x)", "mul/sum"), ("batched_dot_bmm(x, x)", "bmm")):
        t = benchmark.Timer(stmt=stmt, setup="from __main__ import batched_dot_mul_sum, batched_dot_bmm",
                            globals={"x": x}, label="Batched dot", sub_label=f"[{n}, 32]", description=label,
                            num_threads=1)  # fmt: skip
        results.append(t.blocked_autorange(min_run_time=0.02))
m0 = benchmark.Timer(stmt="torch.ones(4) * 2", num_threads=1).timeit(50)
compare = benchmark.Compare(results)
compare.trim_significant_figures()
table = str(compare)
print(table)
print(m0)
assert all(m.median > 0 and m.number_per_run >= 1 for m in results) and "Batched dot" in table
print("RESULT", json.dumps({
    "values": values, "titles": [m.title for m in results], "descriptions": [m.task_spec.description for m in results],
    "threads": [m.task_spec.num_threads for m in results], "timeit_runs": m0.number_per_run,
    "timeit_measurements": len(m0.times),
    "table_rows": sum(line.strip().startswith("[") for line in table.splitlines()),
    "_medians": [m.median for m in results],
}))  # fmt: skip
