"""A python3 workload run under LD_PRELOAD=libdefero.so: containers, strings,
regular expressions, JSON, threads and a subprocess. Exits non-zero if any
result is wrong."""
import json
import re
import subprocess
import sys
import threading


def work(seed: int, out: list) -> None:
    d = {}
    for i in range(50000):
        d[f"k{(i * seed) % 70001}"] = [i, str(i) * 3, {"v": i}]
    s = sorted(d, key=lambda k: d[k][0])
    text = " ".join(s[:5000])
    words = re.findall(r"k(\d+)", text)
    blob = json.dumps({k: d[k] for k in s[:2000]})
    back = json.loads(blob)
    out.append((len(d), len(words), len(back)))


results: list = []
threads = [threading.Thread(target=work, args=(7 + t, results)) for t in range(3)]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert len(results) == 3, results
for n, w, b in results:
    assert n == 50000 and w == 5000 and b == 2000, (n, w, b)
big = bytearray(8 << 20)
big[-1] = 7
assert sum(big) == 7
child = subprocess.run([sys.executable, "-c", "print(sum(range(1000)))"],
                       capture_output=True, text=True, check=True)
assert child.stdout.strip() == "499500", child.stdout
print("workload.py: ok")
