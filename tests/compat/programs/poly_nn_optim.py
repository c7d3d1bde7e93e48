# "nn" and "optim" tutorials: Linear + Flatten(0, 1), MSELoss(sum), manual step then RMSprop. The losses are
# recorded every 100 steps as in the tutorials: at step 249 RMSprop oscillates and torch itself gives 16.59 with
# one thread and 16.20 with two, so that point measures the machine, not the framework.
# compat-tolerance: 2e-3 1e-4
import json
import math

import numpy as np
import torch

x = torch.linspace(-math.pi, math.pi, 2000)
y = torch.sin(x)
p = torch.tensor([1, 2, 3])
xx = x.unsqueeze(-1).pow(p)

model = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Flatten(0, 1))
with torch.no_grad():
    model[0].weight.copy_(torch.from_numpy(np.array([[0.3, -0.1, -0.05]], dtype=np.float32)))
    model[0].bias.fill_(0.02)
loss_fn = torch.nn.MSELoss(reduction="sum")

losses = []
learning_rate = 1e-6
for t in range(200):
    y_pred = model(xx)
    loss = loss_fn(y_pred, y)
    model.zero_grad()
    loss.backward()
    with torch.no_grad():
        for param in model.parameters():
            param -= learning_rate * param.grad
    if t % 100 == 99:
        losses.append(loss.item())

optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3)
for t in range(300):
    loss = loss_fn(model(xx), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if t % 100 == 99:
        losses.append(loss.item())

linear_layer = model[0]
print(f"y = {linear_layer.bias.item()} + {linear_layer.weight[:, 0].item()} x + ...")
print("RESULT", json.dumps({"losses": losses, "weight": linear_layer.weight.flatten().tolist()}))
