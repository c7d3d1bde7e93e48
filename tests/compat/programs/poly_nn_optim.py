# "nn" and "optim" tutorials: Linear + Flatten(0, 1), MSELoss(sum), manual step then RMSprop. Plain gradient descent
# on this least-squares problem contracts, so its losses are stable numbers. RMSprop (lr 1e-3) ends in an oscillation
# of about lr around the optimum whose phase any rounding moves: from step ~150 on, its loss and weights depend on
# the summation order (torch alone: final weight[1] -7.8e-9 on 1 thread, -7.5e-5 on 2). So RMSprop is compared on
# its first 100 steps and, each step from the same state, on 5 steps of a fresh model; where the tutorial's run ends
# is kept under "_" keys and only checked here (the loss fell well below where RMSprop took over).
# compat-tolerance: 1e-4 1e-6
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
late_losses = []
for t in range(300):
    loss = loss_fn(model(xx), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if t == 99:
        losses.append(loss.item())
    elif t % 100 == 99:
        late_losses.append(loss.item())
assert late_losses[-1] < 0.5 * losses[-1], (losses, late_losses)

linear_layer = model[0]
print(f"y = {linear_layer.bias.item()} + {linear_layer.weight[:, 0].item()} x + ...")

# RMSprop step by step from one state: a fresh model from the same numbers, five steps, every parameter each step
fresh = torch.nn.Linear(3, 1)
with torch.no_grad():
    fresh.weight.copy_(torch.from_numpy(np.array([[0.8, -0.01, -0.08]], dtype=np.float32)))
    fresh.bias.fill_(0.01)
rmsprop = torch.optim.RMSprop(fresh.parameters(), lr=1e-3)
steps = []
for _ in range(5):
    loss = loss_fn(fresh(xx).flatten(), y)
    rmsprop.zero_grad()
    loss.backward()
    rmsprop.step()
    steps.append([loss.item(), *fresh.weight.flatten().tolist(), fresh.bias.item()])

print(
    "RESULT",
    json.dumps(
        {
            "losses": losses,
            "rmsprop_steps": steps,
            "_late_losses": late_losses,
            "_weight": linear_layer.weight.flatten().tolist(),
        }
    ),
)
