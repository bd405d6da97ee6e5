#!/usr/bin/env python3
"""kforge's bridge to KernelBench problem files (docs/kernelbench.md).

kforge starts this script once per problem file (`kforge_kernelbench.py serve FILE`) and talks to
it over stdin/stdout: each request is one JSON line, followed by the raw little-endian doubles of
the tensors it announces; each reply is one JSON line ({"ok": true, ...} or {"ok": false, "error":
...}) followed by the doubles its "counts" announce. Anything the problem file prints goes to
stderr, so it cannot break the protocol.

The problem file is executed again for every set of sizes: each module-level integer constant
whose value is a literal expression (`N = 2048 * 2`, `dim = 1`, or an element of a tuple
`input_shape = (32768,)`, named `input_shape_0`) is a size; kforge rebinds it by replacing its
expression in the syntax tree, so constants derived from it (`out = N * 2`) follow.
"""
import ast
import json
import math
import os
import sys
import time
import traceback

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

try:  # torch 1.13 keeps the fake tensors under _subclasses; they cost no memory.
    from torch._subclasses.fake_tensor import FakeTensorMode
except ImportError:  # pragma: no cover
    FakeTensorMode = None


_CURRENT_FILE = [""]  # the problem file being served, for error locations


class ProblemFault(Exception):
    """The problem file itself is at fault (it raises, or its sizes are refused)."""


# ---------------------------------------------------------------- the module and its sizes

def _literal_int(node):
    """The value of an integer expression made of literals only, else None."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            return None
    try:
        value = eval(compile(ast.Expression(node), "<size>", "eval"), {"__builtins__": {}})
    except Exception:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def _size_sites(tree):
    """[(name, default, setter)] for every rebindable constant, in file order."""
    sites = []
    for stmt in tree.body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)):
            continue
        name = stmt.targets[0].id
        if name.isupper() and name.startswith("KFORGE"):
            continue
        value = _literal_int(stmt.value)
        if value is not None:
            sites.append((name, value, (stmt, None)))
        elif isinstance(stmt.value, (ast.Tuple, ast.List)):
            for i, elt in enumerate(stmt.value.elts):
                v = _literal_int(elt)
                if v is not None:
                    sites.append((f"{name}_{i}", v, (stmt, i)))
    return sites


class ProblemModule:
    def __init__(self, path):
        self.path = path
        _CURRENT_FILE[0] = path
        with open(path, encoding="utf-8") as f:
            self.source = f.read()
        try:
            self.tree = ast.parse(self.source, filename=path)
        except SyntaxError as e:
            raise ProblemFault(f"{path} is not valid Python: {e}")
        self.sites = _size_sites(self.tree)
        self.defaults = {name: v for name, v, _ in self.sites}
        self._cache_key = None
        self._cache = None

    def load(self, sizes):
        """The module executed with `sizes` bound (a fresh namespace each time)."""
        key = tuple(sorted(sizes.items()))
        if key == self._cache_key:
            return self._cache
        for name in sizes:
            if name not in self.defaults:
                raise ProblemFault(f"no size constant '{name}' in {self.path}")
        tree = ast.parse(self.source, filename=self.path)
        sites = _size_sites(tree)
        for name, default, (stmt, index) in sites:
            value = int(sizes.get(name, default))
            if index is None:
                stmt.value = ast.copy_location(ast.Constant(value), stmt.value)
            else:
                stmt.value.elts[index] = ast.copy_location(ast.Constant(value), stmt.value.elts[index])
        ast.fix_missing_locations(tree)
        namespace = {"__name__": "kforge_kernelbench_problem", "__file__": self.path}
        try:
            exec(compile(tree, self.path, "exec"), namespace)
        except Exception as e:
            raise ProblemFault(f"{self.path} raised while loading: {type(e).__name__}: {e}")
        for needed in ("Model", "get_inputs", "get_init_inputs"):
            if needed not in namespace:
                raise ProblemFault(f"{self.path} defines no {needed} (a KernelBench problem file has "
                                   "class Model, get_inputs() and get_init_inputs())")
        self._cache_key, self._cache = key, namespace
        return namespace


def _call(what, fn, *args):
    try:
        return fn(*args)
    except ProblemFault:
        raise
    except Exception as e:
        # The innermost line of the problem file itself, not of torch's code underneath.
        own = [f for f in traceback.extract_tb(e.__traceback__) if f.filename.endswith(".py")
               and os.path.basename(f.filename) == os.path.basename(_CURRENT_FILE[0])]
        where = f" (at line {own[-1].lineno}: {own[-1].line})" if own else ""
        raise ProblemFault(f"{what} raised {type(e).__name__}: {e}{where}")


def _forward_names(model, count):
    import inspect
    try:
        params = [p for p in inspect.signature(model.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        names = [p.name for p in params]
    except (TypeError, ValueError):
        names = []
    names = names[:count] + [f"in{i}" for i in range(len(names), count)]
    return names


def _c_name(name):
    out = "".join(c if c.isalnum() else "_" for c in name)
    return out if out and not out[0].isdigit() else "t_" + out


# ---------------------------------------------------------------- counting FLOPs

def _numel(shape):
    n = 1
    for d in shape:
        n *= int(d)
    return n


class Counter(TorchDispatchMode):
    """Counts an estimate of the FLOPs and the reduction lengths of the aten ops a forward runs."""

    MATMUL = {"mm", "addmm", "bmm", "baddbmm", "addmv", "mv", "dot", "addbmm"}
    FREE = {"view", "_unsafe_view", "reshape", "expand", "permute", "transpose", "t", "clone",
            "contiguous", "detach", "alias", "slice", "select", "unsqueeze", "squeeze", "as_strided",
            "_to_copy", "copy_", "empty", "empty_like", "zeros", "zeros_like", "ones", "ones_like",
            "lift_fresh", "new_empty", "new_zeros", "unbind", "split", "chunk", "cat", "stack",
            "index_select", "gather", "flip", "roll", "_reshape_alias", "empty_strided", "fill_",
            "zero_", "new_empty_strided", "split_with_sizes", "narrow", "repeat", "constant_pad_nd"}

    def __init__(self):
        super().__init__()
        self.flops = 0.0
        self.length = 0.0  # summed along the forward: each op's longest reduction

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        try:
            self._count(func, args, out)
        except Exception:
            pass
        return out

    def _count(self, func, args, out):
        name = func.__name__.split(".")[0]
        outs = [o for o in (out if isinstance(out, (tuple, list)) else [out]) if isinstance(o, torch.Tensor)]
        if not outs:
            return
        out_n = sum(o.numel() for o in outs)
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        in_n = max([t.numel() for t in tensors] or [0])
        if name in self.FREE:
            return
        if name in self.MATMUL:
            mats = [t for t in tensors if t.dim() >= 1]
            a = mats[-2] if len(mats) >= 2 else mats[0]
            k = a.shape[-1]
            self.flops += 2.0 * outs[0].numel() * k
            self.length += k + 2
        elif name == "convolution" or name.startswith("conv") or name.startswith("_convolution"):
            x, w = tensors[0], tensors[1]
            transposed = bool(args[6]) if name == "convolution" and len(args) > 6 else "transpose" in name
            groups = int(args[8]) if name == "convolution" and len(args) > 8 else 1
            per_out = _numel(w.shape[1:]) if not transposed else _numel(w.shape[2:]) * w.shape[0] // max(groups, 1)
            if transposed:  # each input element meets each weight of its group once
                self.flops += 2.0 * x.numel() * _numel(w.shape[1:])
            else:
                self.flops += 2.0 * outs[0].numel() * per_out
            self.length += per_out + 2
        elif "batch_norm" in name:  # statistics per channel over every other dimension
            x = tensors[0]
            self.flops += 8.0 * x.numel()
            self.length += x.numel() / max(x.shape[1], 1) + 4
        elif "layer_norm" in name:  # statistics over the normalized shape
            self.flops += 8.0 * tensors[0].numel()
            self.length += _numel(args[1]) + 4
        elif "group_norm" in name:  # args: input, weight, bias, N, C, HxW, group, eps
            self.flops += 8.0 * tensors[0].numel()
            self.length += int(args[4]) // max(int(args[6]), 1) * int(args[5]) + 4
        elif name in ("_softmax", "_log_softmax", "softmax", "log_softmax", "logsumexp"):
            x = tensors[0]
            dims = args[1] if isinstance(args[1], (list, tuple)) else [args[1]]
            self.flops += 5.0 * x.numel()
            self.length += _numel(x.shape[d] for d in dims) + 2 if x.dim() else 3
        else:
            self.flops += float(max(in_n, out_n))
            self.length += max(1.0, in_n / max(out_n, 1)) if in_n > out_n else 1.0
            if name.startswith("cum"):
                dim = args[1] if len(args) > 1 else -1
                self.length += tensors[0].shape[dim] if tensors and tensors[0].dim() else 1


# ---------------------------------------------------------------- the problem at some sizes

def _fake_mode():
    if FakeTensorMode is None:
        return None
    try:
        return FakeTensorMode(allow_non_fake_inputs=True)
    except TypeError:
        return FakeTensorMode()


class Instance:
    """The problem at one binding of its sizes: shapes known without allocating anything."""

    def __init__(self, module, sizes):
        self.ns = module.load(sizes)
        self.sizes = sizes
        mode = _fake_mode()
        if mode is None:
            raise ProblemFault("this torch has no FakeTensorMode (kforge needs torch >= 1.13)")
        with mode:
            torch.manual_seed(0)
            init = _call("get_init_inputs()", self.ns["get_init_inputs"])
            model = _call("Model(*get_init_inputs())", self.ns["Model"], *init)
            inputs = _call("get_inputs()", self.ns["get_inputs"])
            if not isinstance(inputs, (list, tuple)):
                raise ProblemFault("get_inputs() must return a list")
            with torch.no_grad():
                out = _call("Model.forward", model, *inputs)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        if not outs or not all(isinstance(o, torch.Tensor) for o in outs):
            raise ProblemFault("forward must return a tensor or a tuple of tensors")
        names = _forward_names(model, len(inputs))
        self.inputs = []      # (position in get_inputs, name, shape, dtype)
        self.fixed = {}       # non-tensor arguments, passed as they are
        for i, (x, name) in enumerate(zip(inputs, names)):
            if isinstance(x, torch.Tensor):
                self.inputs.append((i, _c_name(name), tuple(x.shape), x.dtype))
            else:
                self.fixed[i] = x
        self.n_args = len(inputs)
        self.state = []       # (state_dict key, name, shape, dtype): parameters, then float buffers
        for key, p in model.named_parameters():
            self.state.append((key, _c_name(key), tuple(p.shape), p.dtype))
        for key, b in model.named_buffers():
            if b.is_floating_point():
                self.state.append((key, _c_name(key), tuple(b.shape), b.dtype))
        self.outputs = [(_c_name(f"out{i}") if len(outs) > 1 else "out", tuple(o.shape), o.dtype)
                        for i, o in enumerate(outs)]
        self.tuple_out = isinstance(out, (tuple, list))
        used = set()
        for lst in (self.inputs, self.state):
            for k, entry in enumerate(lst):
                name = entry[1]
                while name in used or name in module.defaults:
                    name += "_"
                used.add(name)
                lst[k] = entry[:1] + (name,) + entry[2:]

    def elements(self):
        return [_numel(s) for _, _, s, _ in self.inputs] + [_numel(s) for _, _, s, _ in self.state] + \
               [_numel(s) for _, s, _ in self.outputs]

    # A fresh real model: its parameters replaced by `state` (doubles) when given.
    def model(self, dtype, state=None, seed=0):
        torch.manual_seed(seed)
        init = _call("get_init_inputs()", self.ns["get_init_inputs"])
        torch.manual_seed(seed)
        model = _call("Model(*get_init_inputs())", self.ns["Model"], *init).to(dtype)
        if state is not None:
            named = dict(model.named_parameters())
            named.update(dict(model.named_buffers()))
            with torch.no_grad():
                for (key, _, shape, _), values in zip(self.state, state):
                    named[key].copy_(torch.from_numpy(values).reshape(shape).to(named[key].dtype))
        return model

    def args(self, tensors, dtype):
        """forward's arguments from doubles: float inputs in `dtype`, the others in their own."""
        out = [None] * self.n_args
        for i, v in self.fixed.items():
            out[i] = v
        for (i, _, shape, dt), values in zip(self.inputs, tensors):
            t = torch.from_numpy(values).reshape(shape)
            out[i] = t.to(dtype if dt.is_floating_point else dt)
        return out

    def forward(self, model, args):
        with torch.no_grad():
            out = _call("Model.forward", model, *args)
        return list(out) if self.tuple_out else [out]

    def describe(self):
        return {
            "sizes": self.sizes,
            "inputs": [{"name": n, "shape": list(s), "dtype": str(d).replace("torch.", ""), "arg": i}
                       for i, n, s, d in self.inputs],
            "state": [{"name": n, "key": k, "shape": list(s), "dtype": str(d).replace("torch.", "")}
                      for k, n, s, d in self.state],
            "outputs": [{"name": n, "shape": list(s), "dtype": str(d).replace("torch.", "")}
                        for n, s, d in self.outputs],
            "fixed": {str(i): repr(v) for i, v in self.fixed.items()},
            "elements": self.elements(),
        }


def _observe_inputs(inst, samples=3):
    """Conditions for inputs, from a few real draws of get_inputs(): integer inputs keep the range
    seen, boolean ones the share of ones seen; floating inputs that were never negative become
    "positive" only where the reference needs it (it is not finite for signed values, and is
    for get_inputs()' own)."""
    ranges, lows, last = {}, {}, None
    for seed in range(samples):
        torch.manual_seed(seed)
        inputs = _call("get_inputs()", inst.ns["get_inputs"])
        last = inputs
        for i, name, _, dt in inst.inputs:
            x = inputs[i]
            if x.numel() == 0:
                continue
            if dt.is_floating_point:
                lows[name] = min(lows.get(name, math.inf), float(x.min()))
            elif dt == torch.bool:
                p = float(x.double().mean())
                lo, hi = ranges.get(name, (1.0, 0.0))
                ranges[name] = (min(lo, p), max(hi, p))
            else:
                lo, hi = int(x.min()), int(x.max())
                old = ranges.get(name, (lo, hi))
                ranges[name] = (min(old[0], lo), max(old[1], hi))
    out = {}
    for i, name, _, dt in inst.inputs:
        if name not in ranges:
            continue
        lo, hi = ranges[name]
        if dt == torch.bool:
            out[name] = {"kind": "flag", "p": min(max((lo + hi) / 2, 0.0), 1.0)}
        else:
            out[name] = {"kind": "index", "low": lo, "high": hi + 1}
    nonneg = [name for name, lo in lows.items() if lo >= 0]
    if nonneg and last is not None:
        def finite(args):
            model = inst.model(torch.float64)
            try:
                outs = inst.forward(model, args)
            except ProblemFault:
                return False
            return all(bool(torch.isfinite(o).all()) for o in outs if o.is_floating_point())
        own = [x.to(torch.float64) if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in last]
        signed = list(own)
        gen = torch.Generator().manual_seed(1)
        for i, name, shape, dt in inst.inputs:
            if dt.is_floating_point:
                signed[i] = torch.randn(shape, generator=gen, dtype=torch.float64)
        if finite(own) and not finite(signed):
            for name in nonneg:
                out[name] = {"kind": "positive"}
    return out


def _count(inst):
    """FLOPs and the summed reduction length of one forward, counted on fake tensors."""
    mode = _fake_mode()
    counter = Counter()
    try:
        with mode:
            model = inst.model(torch.float32)
            args = []
            for i in range(inst.n_args):
                args.append(inst.fixed.get(i))
            for i, _, shape, dt in inst.inputs:
                args[i] = torch.zeros(shape, dtype=torch.float32 if dt.is_floating_point else dt)
            with counter, torch.no_grad():
                model(*args)
        return counter.flops, max(counter.length, 1.0), True
    except Exception:
        return 0.0, 1.0, False


# ---------------------------------------------------------------- the reference

def _doubles(t):
    return t.detach().to(torch.float64).contiguous().reshape(-1).numpy()


def reference(inst, tensors, u32=2.0 ** -24, witness=8.0, sensitivity=4.0):
    """Output and magnitude of the forward in float64 (docs/kernelbench.md, the error bound).

    The magnitude of an element is the largest of |ref|, the forward over absolute values, and
    two floors: 8x torch's own float32 error there, and 4x the element's sensitivity to moving
    every input and parameter by gamma_n relative (once with random signs, once all outward),
    divided by gamma_n."""
    n_in = len(inst.inputs)
    ins, state = tensors[:n_in], tensors[n_in:]
    floating = [dt.is_floating_point for _, _, _, dt in inst.inputs]
    model64 = inst.model(torch.float64, state)
    ref = inst.forward(model64, inst.args(ins, torch.float64))
    # 1. The same forward over absolute values: Σ|terms| where the operation is a sum of products.
    abs_ins = [np.abs(v) if f else v for v, f in zip(ins, floating)]
    try:
        absf = inst.forward(inst.model(torch.float64, [np.abs(v) for v in state]),
                            inst.args(abs_ins, torch.float64))
    except ProblemFault:
        absf = [None] * len(ref)
    # 2. torch's own float32 result: a witness of how far a correct float32 computation strays.
    try:
        f32 = inst.forward(inst.model(torch.float32, state), inst.args(ins, torch.float32))
    except ProblemFault:
        f32 = [None] * len(ref)
    # 3. Sensitivity: inputs and parameters moved by delta |v| (delta = min(gamma_n, 2^-10), so
    # the forward stays in its linear range; the change is scaled back to gamma_n), with random
    # signs (each element's own share) and all outward (shared statistics: a mean, a norm).
    _, length, _ = _count(inst)
    gamma = length * u32 / max(1e-300, 1 - length * u32)
    delta = min(gamma, 2.0 ** -10)
    rng = np.random.default_rng(0x6b66)
    moved = []
    for signs in ("random", "outward"):
        def move(v):
            s = rng.choice([-1.0, 1.0], size=v.shape) if signs == "random" else 1.0
            return v + delta * s * np.abs(v)
        try:
            moved.append(inst.forward(inst.model(torch.float64, [move(v) for v in state]),
                                      inst.args([move(v) if f else v for v, f in zip(ins, floating)],
                                                torch.float64)))
        except ProblemFault:
            pass
    outs, mags = [], []
    for k, r in enumerate(ref):
        r64 = _doubles(r)
        if not r.is_floating_point():
            outs.append(r64)
            mags.append(np.zeros_like(r64))
            continue
        mag = np.abs(r64)
        if absf[k] is not None:
            a = np.abs(_doubles(absf[k]))
            mag = np.maximum(mag, np.where(np.isfinite(a), a, 0.0))
        evidence = []
        if f32[k] is not None:
            evidence.append(witness * np.abs(_doubles(f32[k]) - r64) / gamma)
        for m in moved:
            evidence.append(sensitivity * np.abs(_doubles(m[k]) - r64) / delta)
        for e in evidence:
            mag = np.maximum(mag, np.where(np.isfinite(e), e, 0.0))
        outs.append(r64)
        mags.append(mag)
    return outs, mags, {"length": length}


# ---------------------------------------------------------------- KernelBench's own check

def kb_trials(inst, seed, trials):
    """KernelBench's inputs and fp32 outputs: its seeds, its get_inputs(), its weights."""
    torch.manual_seed(seed)
    seeds = [torch.randint(0, 2 ** 32 - 1, (1,)).item() for _ in range(trials)]
    model = inst.model(torch.float32, seed=seed)
    state = dict(model.named_parameters())
    state.update(dict(model.named_buffers()))
    blobs = []
    for s in seeds:
        torch.manual_seed(s)
        inputs = _call("get_inputs()", inst.ns["get_inputs"])
        args = [x.to(torch.float32) if isinstance(x, torch.Tensor) and x.is_floating_point() else x
                for x in inputs]
        state_values = [_doubles(state[k]) for k, _, _, _ in inst.state]  # before the forward
        out = inst.forward(model, args)
        blobs += [_doubles(args[i]) for i, _, _, _ in inst.inputs] + state_values + [_doubles(o) for o in out]
    return blobs, seeds


def kb_time(inst, seed, runs, threads):
    """torch eager's time for one forward in float32 on KernelBench's inputs (median, mean)."""
    if threads > 0:
        torch.set_num_threads(threads)
    model = inst.model(torch.float32, seed=seed)
    torch.manual_seed(seed)
    inputs = _call("get_inputs()", inst.ns["get_inputs"])
    args = [x.to(torch.float32) if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]
    for _ in range(3):
        inst.forward(model, args)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        inst.forward(model, args)
        times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2], sum(times) / len(times)


# ---------------------------------------------------------------- suggesting sizes that fit

def suggest(module, sizes, budget_elements, bytes_per_element):
    """Halves the largest sizes (never below 16, unless nothing else is left) until it fits."""
    sizes = dict(module.defaults, **sizes)
    for _ in range(200):
        try:
            need = sum(Instance(module, sizes).elements()) * bytes_per_element
        except ProblemFault:
            need = None
        if need is not None and need <= budget_elements:
            return sizes
        candidates = sorted(((v, k) for k, v in sizes.items() if v > 16), reverse=True)
        if not candidates:
            candidates = sorted(((v, k) for k, v in sizes.items() if v > 1), reverse=True)
        if not candidates:
            return None
        v, k = candidates[0]
        sizes[k] = max(v // 2, 1)
    return None


# ---------------------------------------------------------------- the server

class Server:
    def __init__(self, path, out):
        self.module = ProblemModule(path)
        self.out = out
        self.instances = {}
        self.eager = None

    def instance(self, sizes):
        key = tuple(sorted(sizes.items()))
        if key not in self.instances:
            if len(self.instances) > 64:
                self.instances.clear()
            self.instances[key] = Instance(self.module, sizes)
        return self.instances[key]

    def reply(self, header, blobs=()):
        header = dict(header, ok=True, counts=[int(b.size) for b in blobs])
        self.out.write((json.dumps(header) + "\n").encode())
        for b in blobs:
            self.out.write(np.ascontiguousarray(b, dtype="<f8").tobytes())
        self.out.flush()

    def handle(self, req, blobs):
        op = req["op"]
        if op == "hello":
            return self.reply({"torch": torch.__version__, "sizes": [[n, v] for n, v, _ in self.module.sites]})
        sizes = {k: int(v) for k, v in req.get("sizes", {}).items()}
        inst = self.instance(sizes)
        if op == "describe":
            d = inst.describe()
            if req.get("observe", False):
                d["conditions"] = _observe_inputs(inst) if req.get("draw", True) else {}
                d["drawn"] = bool(req.get("draw", True))
                d["flops"], d["length"], d["counted"] = _count(inst)
            return self.reply(d)
        if op == "reference":
            outs, mags, info = reference(inst, blobs)
            blobs = [b for pair in zip(outs, mags) for b in pair]
            return self.reply(info, blobs)
        if op == "kb_trials":
            blobs, seeds = kb_trials(inst, int(req.get("seed", 42)), int(req.get("trials", 5)))
            return self.reply({"seeds": seeds}, blobs)
        if op == "kb_time":
            median, mean = kb_time(inst, int(req.get("seed", 42)), int(req.get("runs", 20)),
                                   int(req.get("threads", 0)))
            return self.reply({"median_s": median, "mean_s": mean})
        if op == "eager_prepare":  # the baseline kforge times beside a kernel
            n_in = len(inst.inputs)
            if int(req.get("threads", 0)) > 0:
                torch.set_num_threads(int(req["threads"]))
            model = inst.model(torch.float32, blobs[n_in:])
            self.eager = (inst, model, inst.args(blobs[:n_in], torch.float32))
            return self.reply({})
        if op == "eager_run":
            inst, model, args = self.eager
            inst.forward(model, args)
            return self.reply({})
        if op == "suggest":
            s = suggest(self.module, sizes, float(req["budget_bytes"]), float(req["bytes_per_element"]))
            return self.reply({"suggested": s})
        raise ProblemFault(f"unknown request '{op}'")


def main():
    if len(sys.argv) != 3 or sys.argv[1] != "serve":
        print("usage: kforge_kernelbench.py serve PROBLEM.py   (started by kforge)", file=sys.stderr)
        return 2
    # The protocol owns the real stdout; whatever the problem prints goes to stderr.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    if os.environ.get("KFORGE_TORCH_THREADS"):  # else torch's own default: every core
        torch.set_num_threads(int(os.environ["KFORGE_TORCH_THREADS"]))
    inp = sys.stdin.buffer
    server, load_error = None, None
    try:
        server = Server(sys.argv[2], out)
    except ProblemFault as e:
        load_error = str(e)
    while True:
        line = inp.readline()
        if not line:
            return 0
        req = json.loads(line)
        blobs = []
        for n in req.get("counts", []):
            data = inp.read(8 * int(n))
            blobs.append(np.frombuffer(data, dtype="<f8").copy())
        if server is None:
            out.write((json.dumps({"ok": False, "error": load_error}) + "\n").encode())
            out.flush()
            continue
        try:
            server.handle(req, blobs)
        except ProblemFault as e:
            out.write((json.dumps({"ok": False, "error": str(e)}) + "\n").encode())
            out.flush()
        except Exception as e:  # a bug of ours or an error torch raises outside the file's code
            out.write((json.dumps({"ok": False, "error": f"{type(e).__name__}: {e}"}) + "\n").encode())
            out.flush()


if __name__ == "__main__":
    sys.exit(main())
