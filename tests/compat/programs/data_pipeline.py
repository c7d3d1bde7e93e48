# A data pipeline in the style of the "Writing Custom Datasets, DataLoaders and Transforms" tutorial: a
# map-style Dataset with a transform, an IterableDataset sharded with get_worker_info, a custom Sampler and a
# BatchSampler, collate_fn padding variable-length sequences, drop_last, ConcatDataset/Subset, random_split and
# WeightedRandomSampler with a seeded Generator (their draws differ between libraries: checked, not compared),
# and a training loop over the padded batches.
# compat-tolerance: 1e-4 1e-5
import json

import numpy as np
import torch
from torch.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    Sampler,
    SequentialSampler,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    get_worker_info,
    random_split,
)  # fmt: skip

rng = np.random.default_rng(7)
lengths = rng.integers(2, 7, 30)
seqs = [rng.normal(size=(n, 3)).astype(np.float32) for n in lengths]
targets = np.array([s.sum() > 0 for s in seqs], dtype=np.int64)


class Normalize:
    def __call__(self, sample):
        x, y = sample
        return (x - x.mean(0, keepdims=True)) / (x.std(0, keepdims=True) + 1.0), y


class SeqDataset(Dataset):
    def __init__(self, transform=None):
        self.transform = transform

    def __len__(self):
        return len(seqs)

    def __getitem__(self, i):
        sample = (seqs[i], int(targets[i]))
        return self.transform(sample) if self.transform else sample


def pad_collate(batch):
    xs, ys = zip(*batch)
    n = max(len(x) for x in xs)
    out = torch.zeros(len(xs), n, 3)
    mask = torch.zeros(len(xs), n, dtype=torch.bool)
    for i, x in enumerate(xs):
        out[i, : len(x)] = torch.from_numpy(x)
        mask[i, : len(x)] = True
    return out, mask, torch.tensor(ys)


class LongestFirst(Sampler):
    def __init__(self, data):
        self.order = sorted(range(len(data)), key=lambda i: -len(seqs[i]))

    def __iter__(self):
        return iter(self.order)

    def __len__(self):
        return len(self.order)


class Counter(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))


ds = SeqDataset(Normalize())
loader = DataLoader(
    ds, batch_sampler=BatchSampler(LongestFirst(ds), batch_size=8, drop_last=False), collate_fn=pad_collate
)
shapes = [list(x.shape) for x, _, _ in loader]
model = torch.nn.Linear(3, 2)
with torch.no_grad():
    model.weight.copy_(torch.from_numpy(rng.uniform(-0.5, 0.5, (2, 3)).astype(np.float32)))
    model.bias.zero_()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
losses = []
for epoch in range(4):
    for x, mask, y in loader:
        pooled = (x * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True)
        loss = torch.nn.functional.cross_entropy(model(pooled), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())

tensors = TensorDataset(torch.arange(10.0), torch.arange(10) % 3)
concat = ConcatDataset([tensors, Subset(tensors, [9, 8, 7])])
seq_batches = [
    b[0].tolist() for b in DataLoader(concat, batch_size=4, sampler=SequentialSampler(concat), drop_last=True)
]
default = default_collate([(torch.ones(2), 1), (torch.zeros(2), 2)])
stream = [b.tolist() for b in DataLoader(Counter(7), batch_size=3)]
g = torch.Generator().manual_seed(0)
train, val = random_split(tensors, [0.7, 0.3], generator=g)
weighted = list(WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], num_samples=20, replacement=True, generator=g))
subset = sorted(SubsetRandomSampler([1, 3, 5], generator=g))
rand_all = sorted(RandomSampler(range(6), generator=g))
assert (
    len(train) == 7 and len(val) == 3 and set(weighted) <= {1, 3} and subset == [1, 3, 5] and rand_all == list(range(6))
)
print("RESULT", json.dumps({
    "shapes": shapes, "losses": losses, "concat_len": len(concat), "seq_batches": seq_batches,
    "default_collate": [default[0].tolist(), default[1].tolist()], "stream": stream,
    "_train": sorted(int(i) for i in train.indices), "_weighted": weighted,
}))  # fmt: skip
