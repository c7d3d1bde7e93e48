"""pyframe.multiprocessing: tensors cross processes as shared memory (queues, Process arguments, spawn), and
Module.share_memory() lets several processes train one model's parameters (Hogwild)."""

import os

import pytest

import pyframe
import pyframe.multiprocessing as mp


def _train(rank, model, steps, lock):
    opt = pyframe.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        # Hogwild's updates are lock-free and may lose one another's writes; the tests count every step, so each
        # step's read-modify-write of the shared parameters is made whole by the lock
        with lock:
            opt.zero_grad()
            model(pyframe.ones(1, 4)).sum().backward()
            opt.step()


def _add_one(q, done):
    t = q.get()
    t.add_(1)
    done.put(t.is_shared())


def _fail(rank):
    if rank == 1:
        raise ValueError("rank one fails")


def test_share_memory_is_real_shared_memory():
    t = pyframe.arange(6.0)
    ptr_before = t.data_ptr()
    assert not t.is_shared() and t.share_memory_() is t and t.is_shared()
    assert t.tolist() == [0, 1, 2, 3, 4, 5] and t.data_ptr() != ptr_before
    fd = t._storage.owner.fd  # a shared-memory file the tensor's pages are mapped from
    assert os.fstat(fd).st_size == 6 * 4
    assert t.share_memory_() is t  # already shared: nothing moves
    v = pyframe.zeros(4)
    _ = v[1:]
    with pytest.raises(RuntimeError, match="other tensors"):
        v.share_memory_()


def test_hogwild_fork():
    pyframe.manual_seed(0)
    model = pyframe.nn.Linear(4, 1)
    model.share_memory()
    assert all(p.is_shared() for p in model.parameters())
    b0 = model.bias.item()
    ctx = mp.get_context("fork")
    lock = ctx.Lock()
    procs = [ctx.Process(target=_train, args=(r, model, 5, lock)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    assert [p.exitcode for p in procs] == [0, 0]
    # d(sum(w.x + b))/db = 1 per step: 2 processes x 5 steps of lr 0.1, all on the one shared bias
    assert model.bias.item() == pytest.approx(b0 - 1.0, abs=1e-5)


def test_hogwild_spawn_pickles_the_model_as_shared_memory():
    model = pyframe.nn.Linear(4, 1)
    model.share_memory()
    b0 = model.bias.item()
    lock = mp.get_context("spawn").Lock()
    mp.spawn(_train, args=(model, 3, lock), nprocs=2)  # the model crosses as the names of its shared storages
    assert model.bias.item() == pytest.approx(b0 - 0.6, abs=1e-5)


def _put_batches(q, n, done):
    for i in range(n):
        q.put(pyframe.full((4,), float(i)))  # each freed here right after sending: the memory must outlive it
    done.wait(120)  # the process itself stays until the receiver has taken them (as with torch's descriptors)


def test_tensors_outlive_their_sender():
    ctx = mp.get_context("fork")
    q, done = ctx.Queue(), ctx.Event()
    p = ctx.Process(target=_put_batches, args=(q, 5, done))
    p.start()
    got = [q.get(timeout=120) for _ in range(5)]
    done.set()
    p.join()
    assert [t.tolist() for t in got] == [[float(i)] * 4 for i in range(5)] and all(t.is_shared() for t in got)


def test_queue_carries_shared_tensors_and_spawn_propagates_errors():
    ctx = mp.get_context("spawn")
    q, done = ctx.Queue(), ctx.Queue()
    t = pyframe.zeros(3)
    p = ctx.Process(target=_add_one, args=(q, done))
    p.start()
    q.put(t)
    assert done.get(timeout=120) is True
    p.join()
    assert t.is_shared() and t.tolist() == [1.0, 1.0, 1.0]  # the child's write is in the parent's memory
    with pytest.raises(mp.ProcessRaisedException, match="rank one fails"):
        mp.spawn(_fail, nprocs=2)
