#!/usr/bin/env python3
"""bench/report.py RESULTS.jsonl [--proxy NAME] [--baseline squid]

Summarises the JSON lines written by bench/run.sh (or by the shared peers harness, same
fields): medians over runs per (system, scenario), ratios to the direct baseline of the
same run, and issue 6's targets for NAME (default vaultgate): the absolute ones always,
the ones relative to Squid when Squid is in the file.
"""
import argparse
import json
import statistics as st

ORDER = ["ka", "fresh", "bytes", "idle"]
LABEL = {"ka": "keep-alive", "fresh": "fresh conn", "bytes": "1 MiB GETs", "idle": "idle conns"}


def load(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    groups = {}
    for r in rows:
        groups.setdefault((r["system"], r["scenario"]), []).append(r)
    return groups


def rate_key(sc):
    return "bytes_per_s" if sc == "bytes" else "rps"


def cpu_us(r):
    """Proxy CPU per completed request in microseconds (per MiB in `bytes`)."""
    return 1e6 * r["proxy_cpu_s"] / max(1, r["ok"])


def kib_per_conn(r):
    return 1024 * (r["rss_mib"] - r["rss0_mib"]) / max(1, r["connections"])


def per_run_ratio(groups, a, b, sc, fn):
    """Median over runs of fn(row of a) / fn(row of b), pairing rows of the same run."""
    ra = {r["run"]: r for r in groups.get((a, sc), [])}
    rb = {r["run"]: r for r in groups.get((b, sc), [])}
    pairs = [fn(ra[k]) / fn(rb[k]) for k in ra if k in rb and fn(rb[k])]
    return st.median(pairs) if pairs else None


def table(groups):
    systems = sorted({s for s, _ in groups}, key=lambda s: (s != "direct", s))
    print(f"{'scenario':<11} {'system':<10} {'req/s':>8} {'MB/s':>7} {'p50 ms':>7} {'p99 ms':>7} "
          f"{'vs direct':>9} {'CPU us/req':>10} {'KiB/conn':>8} {'errors':>6} {'runs':>4}")
    for sc in ORDER:
        for s in systems:
            rs = groups.get((s, sc))
            if not rs:
                continue
            errs = sum(r["errors"] for r in rs)
            cpu = "-" if s == "direct" else f"{st.median(cpu_us(r) for r in rs):.0f}"
            if sc == "idle":
                kib = f"{st.median(kib_per_conn(r) for r in rs):.0f}"
                print(f"{LABEL[sc]:<11} {s:<10} {'-':>8} {'-':>7} {'-':>7} {'-':>7} {'-':>9} "
                      f"{'-':>10} {kib:>8} {errs:>6} {len(rs):>4}  "
                      f"(RSS {st.median(r['rss0_mib'] for r in rs):.0f} -> "
                      f"{st.median(r['rss_mib'] for r in rs):.0f} MiB for "
                      f"{st.median(r['connections'] for r in rs):.0f} held connections, "
                      f"upstream conns held {st.median(r.get('up_conns_held', 0) for r in rs):.0f})")
                continue
            ratio = per_run_ratio(groups, s, "direct", sc, lambda r: r[rate_key(sc)])
            rtxt = f"{ratio:.2f}x" if ratio is not None else ""
            print(f"{LABEL[sc]:<11} {s:<10} {st.median(r['rps'] for r in rs):>8.0f} "
                  f"{st.median(r['bytes_per_s'] for r in rs) / 1e6:>7.1f} "
                  f"{st.median(r['p50_ms'] for r in rs):>7.2f} {st.median(r['p99_ms'] for r in rs):>7.2f} "
                  f"{rtxt:>9} {cpu:>10} {'-':>8} {errs:>6} {len(rs):>4}")


def targets(groups, me, base):
    out = []

    def check(name, value, ok, goal):
        out.append((name, value, "PASS" if ok else "FAIL", goal))

    def med(sc, fn, s=me):
        rs = groups.get((s, sc))
        return st.median(fn(r) for r in rs) if rs else None

    b = per_run_ratio(groups, me, "direct", "bytes", lambda r: r["bytes_per_s"])
    if b is not None:
        check("1 MiB: throughput vs direct", f"{b:.2f}x", b >= 0.5, ">= 0.50x")
        c = med("bytes", cpu_us)
        check("1 MiB: proxy CPU per MiB", f"{c / 1000:.2f} ms", c <= 1000, "<= 1 ms")
    k = med("idle", kib_per_conn)
    if k is not None:
        check("idle: memory per MITM'd conn", f"{k:.0f} KiB", k <= 24, "<= 24 KiB")
    if any(s == base for s, _ in groups):
        r = per_run_ratio(groups, me, base, "ka", lambda r: r["rps"])
        if r is not None:
            check(f"keep-alive: req/s vs {base}", f"{r:.2f}x", r >= 1.5, ">= 1.50x")
            c = per_run_ratio(groups, me, base, "ka", cpu_us)
            check(f"keep-alive: CPU/req vs {base}", f"{c:.2f}x", c <= 1 / 3, "<= 0.33x")
            p = per_run_ratio(groups, me, base, "ka", lambda r: r["p99_ms"])
            check(f"keep-alive: p99 vs {base}", f"{p:.2f}x", p <= 0.5, "<= 0.50x")
        r = per_run_ratio(groups, me, base, "fresh", lambda r: r["rps"])
        if r is not None:
            check(f"fresh conn: rate vs {base}", f"{r:.2f}x", r >= 1.0, ">= 1.00x")
            c = per_run_ratio(groups, me, base, "fresh", cpu_us)
            check(f"fresh conn: CPU/conn vs {base}", f"{c:.2f}x", c <= 0.5, "<= 0.50x")
        r = per_run_ratio(groups, me, base, "bytes", lambda r: r["bytes_per_s"])
        if r is not None:
            check(f"1 MiB: MB/s vs {base}", f"{r:.2f}x", r > 2.5, "> 2.50x")
        slower = [sc for sc in ("ka", "fresh", "bytes")
                  if (per_run_ratio(groups, me, base, sc, lambda r: r[rate_key(sc)]) or 1) < 1]
        check(f"no scenario slower than {base}", ",".join(slower) or "none", not slower, "none")
    if out:
        print(f"\ntargets of issue 6 for {me}:")
        for name, value, verdict, goal in out:
            print(f"  {verdict:<4}  {name:<34} {value:>9}  (target {goal})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--proxy", default="vaultgate")
    ap.add_argument("--baseline", default="squid")
    a = ap.parse_args()
    groups = load(a.results)
    table(groups)
    if any(s == a.proxy for s, _ in groups):
        targets(groups, a.proxy, a.baseline)


if __name__ == "__main__":
    main()
