# The "tensors and autograd" tutorial, with float64 and a no_grad update.
# compat-tolerance: 1e-6 1e-8
import json
import math

import torch

dtype = torch.float64
device = "cuda" if torch.cuda.is_available() else "cpu"
torch.set_default_device(device)

x = torch.linspace(-math.pi, math.pi, 2000, dtype=dtype)
y = torch.sin(x)

a = torch.tensor(0.1, dtype=dtype, requires_grad=True)
b = torch.tensor(-0.2, dtype=dtype, requires_grad=True)
c = torch.tensor(0.05, dtype=dtype, requires_grad=True)
d = torch.tensor(0.3, dtype=dtype, requires_grad=True)

learning_rate = 1e-6
losses = []
for t in range(300):
    y_pred = a + b * x + c * x**2 + d * x**3
    loss = (y_pred - y).pow(2).sum()
    if t % 50 == 49:
        losses.append(loss.item())
    loss.backward()
    with torch.no_grad():
        a -= learning_rate * a.grad
        b -= learning_rate * b.grad
        c -= learning_rate * c.grad
        d -= learning_rate * d.grad
        a.grad = None
        b.grad = None
        c.grad = None
        d.grad = None

assert a.is_leaf and a.grad is None and loss.grad_fn is not None
print("RESULT", json.dumps({"losses": losses, "coeffs": [a.item(), b.item(), c.item(), d.item()]}))
