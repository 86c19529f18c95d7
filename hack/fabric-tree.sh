#!/usr/bin/env bash
# Materializes a sysfs fixture of internal/fabric/testdata (the .sysfs text
# format: cd, file, link) as a real directory tree, for benchmarks that run
# the agent against it (--sysfs). COPIES repeats every device with another
# PCI domain and name, e.g. the p4d capture's 4 EFA devices 8 times for a
# p5's 32.
#   usage: hack/fabric-tree.sh FIXTURE.sysfs OUTDIR [COPIES]   (default 1)
set -euo pipefail
fixture="$1" out="$2" copies="${3:-1}"
mkdir -p "$out"
python3 - "$fixture" "$out" "$copies" <<'PY'
import ast, os, re, sys
fixture, out, copies = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = [l.rstrip("\n") for l in open(fixture) if l.strip() and not l.startswith("#")]
for k in range(copies):
    def rename(p):
        # Another PCI domain per copy, and a suffix on device names.
        if k == 0:
            return p
        p = re.sub(r"\b0000:", "%04x:" % k, p).replace("pci0000:", "pci%04x:" % k)
        return re.sub(r"\b(mlx5_\d+|rdmap\d+s\d+|efa_\d+)\b", r"\1_%d" % k, p)
    cwd = ""
    for line in lines:
        op, rest = line.split(" ", 1)
        if op == "cd":
            cwd = rename(rest)
            continue
        path, arg = rest.split(" ", 1)
        dst = os.path.join(out, cwd, rename(path))
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if op == "file":
            with open(dst, "wb") as f:
                f.write(ast.literal_eval(arg).encode())
        elif op == "link":
            if not os.path.lexists(dst):
                os.symlink(rename(arg), dst)
        else:
            sys.exit("%s: unknown line %r" % (fixture, line))
PY
echo "$out: $(ls "$out/class/infiniband" | wc -l) RDMA devices"
