# Knowledge distillation (Hinton et al. 2015) as in the PyTorch "Knowledge Distillation" tutorial: a teacher
# trained first, then a smaller student trained on the soft targets (KL divergence at temperature T, scaled by
# T^2) mixed with the hard-label cross-entropy, beside the same student trained alone; plus the tutorial's
# cosine-embedding feature loss on hidden representations.
# compat-tolerance: 1e-4 1e-5
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.default_rng(9)
centers = rng.normal(size=(4, 10)) * 2
labels = rng.integers(0, 4, 400)
X = torch.from_numpy((centers[labels] + rng.normal(size=(400, 10))).astype(np.float32))
Y = torch.from_numpy(labels)


def init(m):
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.from_numpy(rng.uniform(-0.3, 0.3, tuple(p.shape)).astype(np.float32)))
    return m


class Net(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(10, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, 4)

    def forward(self, x, with_features=False):
        h = self.features(x)
        return (self.head(h), h) if with_features else self.head(h)


def train(model, loss_fn, epochs=4):
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for epoch in range(epochs):
        for b in range(0, 400, 50):
            opt.zero_grad()
            loss = loss_fn(model, X[b : b + 50], Y[b : b + 50])
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return losses


teacher = init(Net(64))
teacher_losses = train(teacher, lambda m, x, y: F.cross_entropy(m(x), y))
teacher.eval()
T, soft_weight = 2.0, 0.75


def kd_loss(m, x, y):
    with torch.no_grad():
        t_logits = teacher(x)
    s_logits = m(x)
    soft = F.kl_div(F.log_softmax(s_logits / T, -1), F.softmax(t_logits / T, -1), reduction="batchmean") * T * T
    return soft_weight * soft + (1 - soft_weight) * F.cross_entropy(s_logits, y)


class Projector(nn.Module):
    def __init__(self):
        super().__init__()
        self.student = Net(8)
        self.proj = nn.Linear(8, 64)

    def forward(self, x, with_features=False):
        return self.student(x, with_features)


def feature_loss(m, x, y):
    with torch.no_grad():
        _, t_h = teacher(x, with_features=True)
    logits, s_h = m(x, with_features=True)
    cos = F.cosine_embedding_loss(m.proj(s_h), t_h, torch.ones(len(x)))
    return F.cross_entropy(logits, y) + 0.5 * cos


student_kd = train(init(Net(8)), kd_loss)
student_alone = train(init(Net(8)), lambda m, x, y: F.cross_entropy(m(x), y))
student_feat = train(init(Projector()), feature_loss)
print("RESULT", json.dumps({"teacher": teacher_losses[:8], "kd": student_kd[:8], "alone": student_alone[:8],
                            "feature": student_feat[:8], "_kd_last": student_kd[-1]}))  # fmt: skip
