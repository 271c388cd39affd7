"""numpy workload: dense linear algebra and FFTs on fixed pseudo-random data.

    numpy-bench.py N FFT_LOG2 REPEAT

matmul of two N x N float64 matrices, a solve, an FFT (and inverse) of 2**FFT_LOG2
complex points, a sort and a reduction, REPEAT times. The data comes from a seeded
PCG64 generator, so every run computes the same thing. OpenBLAS is held to one
thread (set before numpy is imported) so that the run does not depend on the number
of cores, and Valgrind, which runs threads one at a time, is not slowed by idle ones.
"""
import os
import sys

for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

import numpy as np  # noqa: E402


def main():
    n, fft_log2, repeat = (int(a) for a in sys.argv[1:4])
    rng = np.random.default_rng(12345)
    a = rng.standard_normal((n, n))
    b = rng.standard_normal((n, n))
    signal = rng.standard_normal(1 << fft_log2) + 1j * rng.standard_normal(1 << fft_log2)
    check = 0.0
    for _ in range(repeat):
        c = a @ b
        x = np.linalg.solve(a + n * np.eye(n), c[:, 0])
        spectrum = np.fft.fft(signal)
        back = np.fft.ifft(spectrum)
        order = np.sort(np.abs(spectrum))
        check += float(c.trace() + x.sum() + order[-1] + np.abs(back - signal).max())
        a, b = b, c / n
    print(f"n={n} fft=2^{fft_log2} repeat={repeat} check={check:.6e}")


if __name__ == "__main__":
    main()
