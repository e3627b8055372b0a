"""The same NumPy code on a Dask cluster: `with tracer.cluster(client):`.

    pip install -e ".[dask]" && python examples/dask_cluster.py

A LocalCluster of two worker processes (1 GiB each) stands in for a real cluster
(`Client("scheduler-address:8786")`). x (1 GiB) is drawn by the workers in seeded blocks and
never comes to this process; the distances of 20,000 points to 5,000 others (800 MB as NumPy
would write them, over this process's budget of 256 MiB) run as chunks on the workers.
"""
import numpy
import psutil
from distributed import Client, LocalCluster

import tracer
import tracer.numpy as np

if __name__ == "__main__":
    with LocalCluster(n_workers=2, threads_per_worker=1, memory_limit="1 GiB",
                      dashboard_address=":0") as lc, Client(lc) as client:
        rss = psutil.Process().memory_info().rss
        with tracer.cluster(client, budget="256 MiB"):
            rng = np.random.default_rng(0)
            x = rng.standard_normal((2_000_000, 64))  # 1 GiB: drawn on the workers
            print("mean of x:", round(float(x.mean()), 5), " std:", round(float(x.std()), 5))
            p, q = rng.standard_normal((20_000, 8)), rng.standard_normal((5_000, 8))
            nearest = ((p[:, None, :] - q[None, :, :]) ** 2).sum(-1).min(1)
            d = numpy.asarray(nearest)  # 20,000 values come back
            print("nearest squared distances:", d[:3].round(4), "...")
        print(f"this process grew by {(psutil.Process().memory_info().rss - rss) / 2**20:.0f} MiB;",
              f"chunks run on the workers: {tracer.stats().split_chunks}")
