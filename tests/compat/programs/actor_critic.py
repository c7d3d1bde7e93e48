# Actor-critic in the style of pytorch/examples reinforcement_learning/actor_critic.py: a shared
# body with two heads, returns discounted and normalised, F.smooth_l1_loss for the value head,
# torch.stack of per-step losses. Actions come from NumPy so both libraries take the same path.
# compat-tolerance: 1e-4 1e-5
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

gamma = 0.99
eps = np.finfo(np.float32).eps.item()


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.affine1 = nn.Linear(4, 16)
        self.action_head = nn.Linear(16, 2)
        self.value_head = nn.Linear(16, 1)
        self.saved_actions = []
        self.rewards = []

    def forward(self, x):
        x = F.relu(self.affine1(x))
        action_prob = F.softmax(self.action_head(x), dim=-1)
        state_values = self.value_head(x)
        return action_prob, state_values


rng = np.random.default_rng(0)
model = Policy()
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rng.normal(0, 0.3, tuple(p.shape)).astype(np.float32)))
optimizer = optim.Adam(model.parameters(), lr=3e-2)

losses = []
for episode in range(5):
    state = rng.normal(0, 1, 4).astype(np.float32)
    for t in range(10):
        probs, state_value = model(torch.from_numpy(state).float())
        action = int(rng.integers(0, 2))
        log_prob = torch.log(probs[action])
        model.saved_actions.append((log_prob, state_value))
        state = (state * 0.9 + rng.normal(0, 0.1, 4)).astype(np.float32)
        model.rewards.append(float(1.0 - abs(state[0])))
    R = 0
    returns = []
    for r in model.rewards[::-1]:
        R = r + gamma * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    policy_losses, value_losses = [], []
    for (log_prob, value), R in zip(model.saved_actions, returns):
        advantage = R - value.item()
        policy_losses.append(-log_prob * advantage)
        value_losses.append(F.smooth_l1_loss(value, torch.tensor([R])))
    optimizer.zero_grad()
    loss = torch.stack(policy_losses).sum() + torch.stack(value_losses).sum()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
    del model.rewards[:]
    del model.saved_actions[:]
beta = F.smooth_l1_loss(torch.tensor([0.0, 0.5, 3.0]), torch.zeros(3), beta=0.5, reduction="none")
print("RESULT", json.dumps({"losses": losses, "beta": beta.tolist(), "value_w": model.value_head.weight.sum().item()}))
