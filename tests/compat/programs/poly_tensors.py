# The "warm-up: tensors" tutorial: fit sin(x) with a cubic, gradients written by hand.
# compat-tolerance: 1e-3 1e-4
import json
import math

import torch

dtype = torch.float
device = torch.device("cpu")

x = torch.linspace(-math.pi, math.pi, 2000, device=device, dtype=dtype)
y = torch.sin(x)

# the tutorial draws these with torch.randn; fixed values let torch and pyframe start alike
a = torch.tensor(0.1, device=device, dtype=dtype)
b = torch.tensor(-0.2, device=device, dtype=dtype)
c = torch.tensor(0.05, device=device, dtype=dtype)
d = torch.tensor(0.3, device=device, dtype=dtype)

learning_rate = 1e-6
losses = []
for t in range(500):
    y_pred = a + b * x + c * x**2 + d * x**3
    loss = (y_pred - y).pow(2).sum().item()
    if t % 100 == 99:
        losses.append(loss)

    grad_y_pred = 2.0 * (y_pred - y)
    grad_a = grad_y_pred.sum()
    grad_b = (grad_y_pred * x).sum()
    grad_c = (grad_y_pred * x**2).sum()
    grad_d = (grad_y_pred * x**3).sum()

    a -= learning_rate * grad_a
    b -= learning_rate * grad_b
    c -= learning_rate * grad_c
    d -= learning_rate * grad_d

print(f"Result: y = {a.item()} + {b.item()} x + {c.item()} x^2 + {d.item()} x^3")
print("RESULT", json.dumps({"losses": losses, "coeffs": [a.item(), b.item(), c.item(), d.item()]}))
