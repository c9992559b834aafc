"""A random frictional contact problem in numpy, in the assembled and the factored form: the
tests', the example's and the benchmark's problem (numpy only, no pytest)."""

import numpy as np


def contact_problem(contacts: int, seed: int = 1):
    """A random frictional problem of `contacts` contacts between `contacts // 2 + 1` bodies,
    in both forms: `(W, q, mu)` assembled with numpy and the arrays of `Problem.factored`."""
    rng = np.random.default_rng(seed)
    nb = contacts // 2 + 1
    mass = rng.uniform(0.5, 2.0, nb)
    inertia = rng.uniform(0.01, 0.05, (nb, 3))
    v_free = rng.normal(0.0, 0.3, (nb, 6))
    v_free[:, 2] -= 0.5  # falling: most contacts close
    bodies = np.stack([rng.integers(0, nb, contacts), np.full(contacts, -1)], axis=1)
    other = rng.integers(0, nb, contacts)
    two = (other != bodies[:, 0]) & (rng.random(contacts) < 0.7)
    bodies[two, 1] = other[two]
    J = rng.normal(0.0, 1.0, (3 * contacts, 2, 6))
    J[np.repeat(bodies[:, 1] == -1, 3), 1, :] = 0.0
    mu = rng.uniform(0.1, 0.8, contacts)
    b = rng.normal(0.0, 0.01, 3 * contacts)
    # The same problem assembled: N = J M⁻¹ Jᵀ, r = J v_free + b.
    inv_m = np.hstack([np.repeat(1.0 / mass[:, None], 3, axis=1), 1.0 / inertia])
    G = np.zeros((3 * contacts, 6 * nb))
    for k in range(contacts):
        for side in range(2):
            body = bodies[k, side]
            if body >= 0:
                G[3 * k : 3 * k + 3, 6 * body : 6 * body + 6] += J[3 * k : 3 * k + 3, side, :]
    W = G @ (inv_m.reshape(-1)[:, None] * G.T)
    q = G @ v_free.reshape(-1) + b
    factored = dict(mass=mass, inertia=inertia, v_free=v_free, bodies=bodies, J=J, mu=mu, b=b)
    return (W, q, mu), factored
