"""Fixtures shared by the router tests (test_policy, test_train)."""

import pytest
import torch

from racer_lib import train as tr
from racer_lib.simulate import simulate


@pytest.fixture(scope="module")
def one_thread():
    """Tiny tensors: thread hand-offs cost more than they save (and a shared machine is worse)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def routing_data():
    """Small simulated training data: records, embeddings, cost unit and train/valid splits."""
    records, emb = simulate("qwen3-4b", "training_mix", dim=16, scale=0.03)
    unit, sp = tr.splits(records, emb)
    return records, emb, unit, sp
