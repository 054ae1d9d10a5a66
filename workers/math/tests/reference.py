#!/usr/bin/env python3
"""Writes reference.txt: the exact values of armada-math's functions at fixed arguments.

Standard library only (decimal, at 60 to 900 significant digits), so that the accuracy test
compares against something independent of every libm. Each line is

    <function> <x bits> [<y bits>] <nearest double bits> <residual>

with bits as 16 hex digits and the residual `(exact - nearest) / ulp(nearest)` in [-0.5, 0.5],
so that a test can measure an error in ulps to a hundredth without arbitrary precision.
The arguments: dense random points over each function's range (a fixed seed) and the special
ones (zero, subnormals, branch thresholds, overflow and underflow edges, multiples of pi/2).

Run: python3 workers/math/tests/reference.py > workers/math/tests/reference.txt
"""
import decimal
import math
import random
import struct
from decimal import Decimal as D

CTX = decimal.Context(prec=60, Emin=-99999, Emax=99999)
decimal.setcontext(CTX)


def bits(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def from_bits(b):
    return struct.unpack("<d", struct.pack("<Q", b))[0]


def ulp_of(r):
    """The spacing of doubles at the double r (the binade's, for r = 2^k: the one above)."""
    r = abs(r)
    if r < 2.0 ** -1022:
        return D(2) ** -1074
    m, e = math.frexp(r)  # r = m 2^e, m in [0.5, 1)
    return D(2) ** (e - 53)


def nearest(v):
    """The double nearest the Decimal v (ties to even), via Python's correctly rounded float()."""
    return float(v)


def line(name, args, exact):
    if exact is None:
        return None
    r = nearest(exact)
    if math.isinf(r):
        res = 0.0
    else:
        res = float((exact - D(r)) / ulp_of(r)) if r != 0.0 or exact != 0 else 0.0
        if r == 0.0 and exact != 0:
            res = float(exact / (D(2) ** -1074))
    return " ".join([name] + [f"{bits(a):016x}" for a in args] + [f"{bits(r):016x}", f"{res:.4f}"])


PI = None


def pi(prec):
    """pi to prec digits: Machin's formula."""
    with decimal.localcontext() as c:
        c.prec = prec + 10

        def arctan_inv(n):
            x = D(1) / n
            x2 = x * x
            s, t, k = x, x, 1
            while True:
                t = -t * x2
                term = t / (2 * k + 1)
                if abs(term) < D(10) ** (-(prec + 8)):
                    break
                s += term
                k += 1
            return s

        return +(16 * arctan_inv(5) - 4 * arctan_inv(239))


PI_LONG = pi(420)


def sin_cos_exact(x):
    with decimal.localcontext() as c:
        c.prec = 420
        two_pi = 2 * PI_LONG
        r = D(x) % two_pi  # sign of x
        if r > PI_LONG:
            r -= two_pi
        if r < -PI_LONG:
            r += two_pi
        c.prec = 80
        r = +r
        s, cc = D(0), D(0)
        term = r
        k = 1
        while True:  # sin
            s += term
            term = -term * r * r / ((k + 1) * (k + 2))
            k += 2
            if term == 0 or abs(term) < D(10) ** -90 * max(abs(s), D(10) ** -400):
                break
        term = D(1)
        k = 0
        while True:
            cc += term
            term = -term * r * r / ((k + 1) * (k + 2))
            k += 2
            if term == 0 or abs(term) < D(10) ** -90:
                break
        return s, cc


def erf_exact(x):
    """(erf(x), erfc(x)) for |x| < 28, by the Taylor series at enough digits that 1 - erf keeps 60."""
    ax = abs(D(x))
    prec = 80 + int(2 * float(ax) ** 2 / math.log(10)) + 10
    with decimal.localcontext() as c:
        c.prec = prec
        xd = D(x)
        x2 = xd * xd
        s = D(0)
        term = xd  # (-1)^n x^(2n+1) / n!
        n = 0
        tiny = D(10) ** (-(prec + 5))
        while True:
            t = term / (2 * n + 1)
            s += t
            if abs(t) < tiny and n > 2 * float(ax) ** 2:
                break
            n += 1
            term = -term * x2 / n
        two_over_sqrt_pi = 2 / pi(prec).sqrt()
        erf = two_over_sqrt_pi * s
        erfc = 1 - erf
    with decimal.localcontext() as c:
        c.prec = 60
        return +erf, +erfc


def exact(name, x, y=None):
    X = D(x)
    if name == "exp":
        return X.exp()
    if name == "ln":
        return X.ln() if x > 0 else None
    if name == "log1p":
        with decimal.localcontext() as c:
            c.prec = 1200
            a = D(1) + X
        return a.ln() if x > -1 else None
    if name == "expm1":
        digits = 60 + max(0, -int(math.floor(math.log10(abs(x))))) if x != 0 else 60
        with decimal.localcontext() as c:
            c.prec = digits
            v = X.exp() - 1
        return +v
    if name == "sin":
        return sin_cos_exact(x)[0]
    if name == "cos":
        return sin_cos_exact(x)[1]
    if name == "erf":
        return erf_exact(x)[0]
    if name == "erfc":
        return erf_exact(x)[1]
    if name == "pow":
        Y = D(y)
        if x > 0:
            with decimal.localcontext() as c:
                c.prec = 80
                return +(Y * X.ln()).exp()
        if y == int(y) and x != 0:
            with decimal.localcontext() as c:
                c.prec = 80
                v = (Y * abs(X).ln()).exp()
                return +(-v if int(y) % 2 else v)
        return None
    if name == "hypot":
        with decimal.localcontext() as c:
            c.prec = 1300
            v = X * X + D(y) * D(y)
            c.prec = 60
            return v.sqrt()
    raise ValueError(name)


def neighbours(v, k=3):
    out = []
    for s in (v, -v):
        b = bits(s)
        out += [from_bits(b + i) for i in range(-k, k + 1) if 0 <= b + i < 2**64]
    return [u for u in out if math.isfinite(u)]


def main():
    rng = random.Random(20261126)
    u = rng.uniform
    log_uniform = lambda lo, hi: math.copysign(10 ** u(lo, hi), u(-1, 1))
    cases = {}
    cases["exp"] = [u(-745, 709.7) for _ in range(600)] + [u(-2, 2) for _ in range(300)] \
        + [log_uniform(-300, 0) for _ in range(100)] \
        + neighbours(0.5 * math.log(2)) + neighbours(1.5 * math.log(2)) + neighbours(2.0 ** -28) \
        + [709.78, 709.782712893384, -708.39, -745.13, -745.1332191019411, 0.0, -0.0, 5e-324]
    cases["ln"] = [10 ** u(-307, 308) for _ in range(500)] + [u(0.5, 2) for _ in range(300)] \
        + [u(1 - 1e-6, 1 + 1e-6) for _ in range(100)] + [5e-324, 1e-310, 2.2250738585072014e-308,
                                                         1.0, 2.0, 0.5, 1.7976931348623157e308] \
        + [x for x in neighbours(1.0) if x > 0] + [x for x in neighbours(math.sqrt(2)) if x > 0]
    cases["log1p"] = [u(-1 + 1e-12, 2) for _ in range(400)] + [log_uniform(-300, 0) for _ in range(300)] \
        + [10 ** u(0, 300) for _ in range(100)] + neighbours(math.sqrt(2) - 1) + neighbours(2.0 ** -29) \
        + [-0.9999999999999999, 0.0, -0.0, 5e-324, -5e-324]
    cases["expm1"] = [u(-40, 709) for _ in range(300)] + [u(-1, 1) for _ in range(300)] \
        + [log_uniform(-300, 0) for _ in range(200)] + neighbours(0.5 * math.log(2)) \
        + neighbours(56 * math.log(2)) + [0.0, -0.0, 5e-324, 709.78]
    cases["sin"] = [u(-10, 10) for _ in range(400)] + [u(-1e6, 1e6) for _ in range(150)] \
        + [log_uniform(-300, 22) for _ in range(150)] + [log_uniform(22, 300) for _ in range(20)] \
        + [k * math.pi / 2 for k in range(-40, 41)] + neighbours(math.pi / 4) + [0.0, -0.0, 5e-324]
    cases["cos"] = list(cases["sin"])
    cases["erfc"] = [u(-6, 27) for _ in range(500)] + [u(-1.5, 3.5) for _ in range(300)] \
        + [log_uniform(-300, 0) for _ in range(100)] + neighbours(0.84375) + neighbours(1.25) \
        + neighbours(1 / 0.35) + neighbours(2.0 ** -28) + [26.0, 27.2, 0.0, -0.0]
    cases["erf"] = [u(-6.5, 6.5) for _ in range(400)] + [log_uniform(-300, 0) for _ in range(100)] \
        + neighbours(0.84375) + neighbours(1.25) + [0.0, -0.0, 5.9]
    pows = [(u(0, 10), u(-20, 20)) for _ in range(500)] + [(u(0.9, 1.1), u(-300, 300)) for _ in range(150)] \
        + [(10 ** u(-300, 300), u(-1, 1)) for _ in range(150)] \
        + [(u(-10, 10), float(rng.randint(-30, 30))) for _ in range(150)] \
        + [(2.0, 0.5), (2.0, -1074.0), (10.0, 308.0), (-1.0, 3.0), (0.5, 1023.5)]
    hypots = [(u(-10, 10), u(-10, 10)) for _ in range(300)] \
        + [(log_uniform(-300, 300), log_uniform(-300, 300)) for _ in range(300)] \
        + [(3.0, 4.0), (1e308, 1e308), (5e-324, 5e-324), (0.0, -0.0), (1.0, 1e-17)]
    out = []
    for name in ["exp", "ln", "log1p", "expm1", "sin", "cos", "erfc", "erf"]:
        for x in cases[name]:
            l = line(name, [x], exact(name, x))
            if l:
                out.append(l)
    for x, y in pows:
        l = line("pow", [x, y], exact("pow", x, y))
        if l:
            out.append(l)
    for x, y in hypots:
        out.append(line("hypot", [x, y], exact("hypot", x, y)))
    print("\n".join(out))


if __name__ == "__main__":
    main()
