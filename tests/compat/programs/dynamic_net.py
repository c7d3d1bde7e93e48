# "Control flow + weight sharing": a module whose depth changes every forward pass.
# compat-tolerance: 1e-4 1e-5
import json
import math
import random

import torch


class DynamicNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Parameter(torch.tensor(0.1))
        self.b = torch.nn.Parameter(torch.tensor(-0.3))
        self.c = torch.nn.Parameter(torch.tensor(0.02))
        self.d = torch.nn.Parameter(torch.tensor(0.1))
        self.e = torch.nn.Parameter(torch.tensor(0.01))
        self.rng = random.Random(0)

    def forward(self, x):
        y = self.a + self.b * x + self.c * x**2 + self.d * x**3
        for exp in range(4, self.rng.randint(4, 6)):
            y = y + self.e * x**exp
        return y

    def string(self):
        return f"y = {self.a.item()} + {self.b.item()} x + {self.c.item()} x^2 + {self.d.item()} x^3 + ..."


x = torch.linspace(-math.pi, math.pi, 2000)
y = torch.sin(x)
model = DynamicNet()
criterion = torch.nn.MSELoss(reduction="sum")
optimizer = torch.optim.SGD(model.parameters(), lr=1e-8, momentum=0.9)
losses = []
for t in range(300):
    loss = criterion(model(x), y)
    if t % 50 == 49:
        losses.append(loss.item())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(model.string())
print("RESULT", json.dumps({"losses": losses, "params": [p.item() for p in model.parameters()]}))
