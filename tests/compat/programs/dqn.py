# DQN (Mnih et al. 2015) as in the PyTorch "Reinforcement Learning (DQN) Tutorial", on a corridor environment
# written here: an epsilon-greedy policy, a replay memory of namedtuple transitions, a target network updated by
# soft (Polyak) updates, Q(s, a) by gather, the Huber loss (SmoothL1Loss), gradient value clipping. Exploration
# and replay draws come from a NumPy generator, so both libraries see the same transitions as long as their
# greedy actions agree; the compared part is the early training, where they do.
# compat-tolerance: 1e-4 1e-5
import json
from collections import deque, namedtuple

import numpy as np
import torch
import torch.nn as nn

Transition = namedtuple("Transition", ("state", "action", "next_state", "reward"))


class Corridor:
    """Positions 0..6; reward 1 at the right end, -0.01 per step; 2 actions (left, right)."""

    def reset(self):
        self.pos = 3
        return self.obs()

    def obs(self):
        o = np.zeros(7, dtype=np.float32)
        o[self.pos] = 1.0
        return o

    def step(self, a):
        self.pos = max(0, min(6, self.pos + (1 if a == 1 else -1)))
        done = self.pos in (0, 6)
        return self.obs(), (1.0 if self.pos == 6 else -0.01), done


rng = np.random.default_rng(10)
policy, target = nn.Sequential(nn.Linear(7, 32), nn.ReLU(), nn.Linear(32, 2)), None
with torch.no_grad():
    for p in policy.parameters():
        p.copy_(torch.from_numpy(rng.uniform(-0.3, 0.3, tuple(p.shape)).astype(np.float32)))
target = nn.Sequential(nn.Linear(7, 32), nn.ReLU(), nn.Linear(32, 2))
target.load_state_dict(policy.state_dict())
opt = torch.optim.AdamW(policy.parameters(), lr=1e-3, amsgrad=True)
memory = deque(maxlen=500)
env, gamma, tau, batch = Corridor(), 0.9, 0.05, 16
losses, returns, q_trace = [], [], []
for episode in range(25):
    s, total = env.reset(), 0.0
    for t in range(30):
        eps = 0.05 + 0.9 * np.exp(-episode / 6)
        if rng.random() < eps:
            a = int(rng.integers(0, 2))
        else:
            with torch.no_grad():
                a = int(policy(torch.from_numpy(s)).argmax())
        s2, r, done = env.step(a)
        total += r
        memory.append(Transition(s, a, None if done else s2, r))
        s = s2
        if len(memory) >= batch:
            sample = [memory[i] for i in rng.choice(len(memory), batch, replace=False)]
            b = Transition(*zip(*sample))
            states = torch.from_numpy(np.stack(b.state))
            actions = torch.tensor(b.action).unsqueeze(1)
            rewards = torch.tensor(b.reward, dtype=torch.float32)
            mask = torch.tensor([n is not None for n in b.next_state])
            next_v = torch.zeros(batch)
            if mask.any():
                with torch.no_grad():
                    nxt = torch.from_numpy(np.stack([n for n in b.next_state if n is not None]))
                    next_v[mask] = target(nxt).max(1).values
            q = policy(states).gather(1, actions)
            loss = nn.SmoothL1Loss()(q, (rewards + gamma * next_v).unsqueeze(1))
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_value_(policy.parameters(), 100)
            opt.step()
            sd, psd = target.state_dict(), policy.state_dict()
            for k in psd:
                sd[k] = psd[k] * tau + sd[k] * (1 - tau)
            target.load_state_dict(sd)
            losses.append(loss.item())
        if done:
            break
    returns.append(total)
    with torch.no_grad():
        q_trace.append(policy(torch.eye(7)).max(1).values.tolist())
print(f"returns {returns[:5]} ... {returns[-5:]}")
print(
    "RESULT", json.dumps({"losses": losses[:30], "q_early": q_trace[:3], "_returns": returns, "_q_last": q_trace[-1]})
)
