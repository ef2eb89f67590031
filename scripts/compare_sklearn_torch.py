#!/usr/bin/env python3
"""compare_sklearn_torch.py — fusenet's FusenetClassifier/FusenetRegressor
against scikit-learn's MLP and a plain PyTorch loop on scikit-learn's
bundled data sets (iris, wine, breast cancer, digits; diabetes for
regression), on the CPU: the same network shape (two hidden layers of 128;
fusenet's and PyTorch's are the fused block Linear -> GroupNorm(8) ->
LeakyReLU -> x2, sklearn's plain ReLU layers), Adam with lr 1e-3, batch
32, EPOCHS epochs, standardised inputs, a 75/25 split (random_state 0).
Prints a markdown table of the test accuracy (R² for diabetes) and the fit
time in seconds.

    FUSENET_LIBRARY=build/libfusenet.so PYTHONPATH=python \\
        build/pyenv/bin/python scripts/compare_sklearn_torch.py [epochs]

Needs numpy, scikit-learn and torch (build/pyenv sees Debian's torch)."""
import sys
import time
import warnings

import numpy as np
import torch
from sklearn import datasets
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import fusenet

EPOCHS = int(sys.argv[1]) if len(sys.argv) > 1 else 100
HIDDEN, GROUPS, BATCH, LR = 128, 8, 32, 1e-3


def torch_fit_predict(Xtr, ytr, Xte, classify):
    """A plain PyTorch loop of the same network and optimiser."""
    torch.manual_seed(1)
    scaler = StandardScaler().fit(Xtr)
    xtr = torch.tensor(scaler.transform(Xtr), dtype=torch.float32)
    xte = torch.tensor(scaler.transform(Xte), dtype=torch.float32)
    out = int(ytr.max()) + 1 if classify else 1
    yt = torch.tensor(ytr, dtype=torch.long if classify else torch.float32)

    class Block(torch.nn.Module):
        def __init__(self, i, o):
            super().__init__()
            self.linear, self.norm = torch.nn.Linear(i, o), torch.nn.GroupNorm(GROUPS, o)

        def forward(self, x):
            return 2 * torch.nn.functional.leaky_relu(self.norm(self.linear(x)), 0.01)

    model = torch.nn.Sequential(Block(xtr.shape[1], HIDDEN), Block(HIDDEN, HIDDEN),
                                torch.nn.Linear(HIDDEN, out))
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    loss_fn = torch.nn.CrossEntropyLoss() if classify else torch.nn.MSELoss()
    g = torch.Generator().manual_seed(1)
    for _ in range(EPOCHS):
        for idx in torch.randperm(len(xtr), generator=g).split(BATCH):
            opt.zero_grad()
            pred = model(xtr[idx])
            loss = loss_fn(pred, yt[idx]) if classify else loss_fn(pred[:, 0], yt[idx])
            loss.backward()
            opt.step()
    with torch.no_grad():
        pred = model(xte)
    return pred.argmax(1).numpy() if classify else pred[:, 0].numpy()


def score(y, pred, classify):
    if classify:
        return float((pred == y).mean())
    return float(1 - ((y - pred) ** 2).sum() / ((y - y.mean()) ** 2).sum())


def timed(fn):
    t = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - t


def main():
    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    sets = [("iris", datasets.load_iris, True), ("wine", datasets.load_wine, True),
            ("breast cancer", datasets.load_breast_cancer, True),
            ("digits", datasets.load_digits, True), ("diabetes (R²)", datasets.load_diabetes, False)]
    print("| data set | rows | fusenet | sklearn MLP | PyTorch loop | fusenet s | sklearn s | "
          "PyTorch s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, load, classify in sets:
        X, y = load(return_X_y=True)
        if not classify:
            y = (y - y.mean()) / y.std()
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0)
        common = dict(optimizer="adam", lr=LR, epochs=EPOCHS, batch_size=BATCH,
                      layers=(HIDDEN, HIDDEN), groups=GROUPS, standardize=True, device="cpu")
        ours = fusenet.FusenetClassifier(**common) if classify else fusenet.FusenetRegressor(**common)
        mlp_cls = MLPClassifier if classify else MLPRegressor
        mlp = make_pipeline(StandardScaler(), mlp_cls(
            hidden_layer_sizes=(HIDDEN, HIDDEN), solver="adam", learning_rate_init=LR,
            batch_size=BATCH, max_iter=EPOCHS, n_iter_no_change=EPOCHS, tol=0,
            random_state=1))
        _, t_ours = timed(lambda: ours.fit(Xtr, ytr))
        _, t_mlp = timed(lambda: mlp.fit(Xtr, ytr))
        p_torch, t_torch = timed(lambda: torch_fit_predict(Xtr, ytr, Xte, classify))
        print("| %s | %d | %.3f | %.3f | %.3f | %.2f | %.2f | %.2f |" % (
            name, len(X), score(yte, ours.predict(Xte), classify),
            score(yte, mlp.predict(Xte), classify), score(yte, p_torch, classify), t_ours,
            t_mlp, t_torch), flush=True)


if __name__ == "__main__":
    main()
