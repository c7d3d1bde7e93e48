# pytorch/examples reinforcement_learning/reinforce, on a cart-pole written in plain Python:
# a Categorical policy, log_prob, returns normalised by mean and std.
# compat-tolerance: 1e-4 1e-5
import json
import math
import random

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical


class CartPole:
    """The classic control task's dynamics (Barto, Sutton and Anderson), no gym needed."""

    def __init__(self, seed):
        self.rng = random.Random(seed)

    def reset(self):
        self.state = [self.rng.uniform(-0.05, 0.05) for _ in range(4)]
        return np.array(self.state, dtype=np.float32)

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        force = 10.0 if action == 1 else -10.0
        costheta, sintheta = math.cos(theta), math.sin(theta)
        temp = (force + 0.05 * theta_dot**2 * sintheta) / 1.1
        thetaacc = (9.8 * sintheta - costheta * temp) / (0.5 * (4.0 / 3.0 - 0.1 * costheta**2 / 1.1))
        xacc = temp - 0.05 * thetaacc * costheta / 1.1
        x, x_dot = x + 0.02 * x_dot, x_dot + 0.02 * xacc
        theta, theta_dot = theta + 0.02 * theta_dot, theta_dot + 0.02 * thetaacc
        self.state = [x, x_dot, theta, theta_dot]
        done = abs(x) > 2.4 or abs(theta) > 12 * 2 * math.pi / 360
        return np.array(self.state, dtype=np.float32), 1.0, done


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.affine1 = nn.Linear(4, 64)
        self.dropout = nn.Dropout(p=0.6)
        self.affine2 = nn.Linear(64, 2)
        self.saved_log_probs = []
        self.rewards = []

    def forward(self, x):
        x = self.affine1(x)
        x = self.dropout(x)
        x = F.relu(x)
        action_scores = self.affine2(x)
        return F.softmax(action_scores, dim=1)


torch.manual_seed(543)
policy = Policy()
rng = np.random.default_rng(0)
with torch.no_grad():
    for p in policy.parameters():
        p.copy_(torch.from_numpy(rng.uniform(-0.3, 0.3, tuple(p.shape)).astype(np.float32)))
optimizer = optim.Adam(policy.parameters(), lr=1e-2)
eps = np.finfo(np.float32).eps.item()
gamma = 0.99

# deterministic part: the policy's probabilities and a log_prob/entropy on a fixed state
policy.eval()
probe = torch.from_numpy(np.array([[0.01, -0.02, 0.03, 0.04]], dtype=np.float32))
probs0 = policy(probe)
dist0 = Categorical(probs0)
fixed = {
    "probs": probs0[0].tolist(),
    "log_prob": dist0.log_prob(torch.tensor([1])).item(),
    "entropy": dist0.entropy().item(),
}
policy.train()


def select_action(state):
    state = torch.from_numpy(state).float().unsqueeze(0)
    probs = policy(state)
    m = Categorical(probs)
    action = m.sample()
    policy.saved_log_probs.append(m.log_prob(action))
    return action.item()


def finish_episode():
    R = 0
    policy_loss = []
    returns = []
    for r in policy.rewards[::-1]:
        R = r + gamma * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    for log_prob, R in zip(policy.saved_log_probs, returns):
        policy_loss.append(-log_prob * R)
    optimizer.zero_grad()
    policy_loss = torch.cat(policy_loss).sum()
    policy_loss.backward()
    optimizer.step()
    del policy.rewards[:]
    del policy.saved_log_probs[:]


env = CartPole(seed=543)
running_reward = 10
lengths = []
for i_episode in range(15):
    state, ep_reward = env.reset(), 0
    for t in range(1, 200):
        action = select_action(state)
        state, reward, done = env.step(action)
        policy.rewards.append(reward)
        ep_reward += reward
        if done:
            break
    running_reward = 0.05 * ep_reward + (1 - 0.05) * running_reward
    lengths.append(t)
    finish_episode()
print(f"episode lengths {lengths}, running reward {running_reward:.2f}")
print("RESULT", json.dumps({**fixed, "_lengths": lengths}))
