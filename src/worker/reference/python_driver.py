# The runner's side of a Python reference (`check_python`): one interpreter per worker,
# one request per line on stdin, one reply per line on stdout. A request names the file and
# the function, the arguments (a buffer as a file of raw bytes, a scalar as a number) and
# the outputs (where to write each, its type and length); the reply is {"ok": true} or
# {"error": "..."}. What the function prints goes to stderr.
import ctypes
import importlib.util
import json
import os
import sys
import traceback

import numpy as np

TYPES = {
    "f16": np.float16, "f32": np.float32, "f64": np.float64,
    "i8": np.int8, "u8": np.uint8, "i16": np.int16, "u16": np.uint16,
    "i32": np.int32, "u32": np.uint32, "i64": np.int64, "u64": np.uint64,
}
modules = {}


def bf16_to_f32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(values):
    """float32 to bfloat16 bits, rounded to nearest even, a NaN kept a NaN."""
    values = np.ascontiguousarray(values, dtype=np.float32)
    bits = values.view(np.uint32)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    rounded[np.isnan(values)] = 0x7FC0
    return rounded


def function(path, name):
    if path not in modules:
        spec = importlib.util.spec_from_file_location(f"runner_reference_{len(modules)}", path)
        module = importlib.util.module_from_spec(spec)
        sys.path.insert(0, os.path.dirname(path))
        spec.loader.exec_module(module)
        modules[path] = module
    found = getattr(modules[path], name, None)
    if not callable(found):
        raise LookupError(f"{os.path.basename(path)} has no function `{name}`")
    return found


def argument(arg, torch):
    if "value" in arg:
        return arg["value"]
    dtype = arg["dtype"]
    raw = np.fromfile(arg["path"], dtype=np.uint16 if dtype == "bf16" else TYPES[dtype])
    if torch is not None:
        if dtype == "bf16":
            return torch.from_numpy(raw.view(np.int16)).view(torch.bfloat16)
        return torch.from_numpy(raw)
    return bf16_to_f32(raw) if dtype == "bf16" else raw


def as_array(value, name):
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu()
        if str(value.dtype) == "torch.bfloat16":
            value = value.float()
        value = value.numpy()
    array = np.asarray(value)
    if array.dtype == object:
        raise TypeError(f"`{name}`: the function returned {type(value).__name__}, not an array")
    return array


def write(array, out):
    name, dtype, length = out["name"], out["dtype"], out["len"]
    if array.size != length:
        raise ValueError(
            f"`{name}`: the function returned {array.size} elements (shape {array.shape}), "
            f"the kernel's output holds {length}")
    target = np.float32 if dtype == "bf16" else TYPES[dtype]
    if not np.can_cast(array.dtype, target, casting="same_kind"):
        raise TypeError(
            f"`{name}`: the function returned {array.dtype} for an output of {dtype}: "
            f"return {np.dtype(target).name}, or values that cast to it")
    array = array.reshape(-1).astype(target)
    if dtype == "bf16":
        array = f32_to_bf16(array)
    # Written over the runner's file of this slot in place: its pages are not allocated
    # again for every request.
    with open(out["path"], "r+b" if os.path.exists(out["path"]) else "wb") as f:
        array.tofile(f)
        f.truncate()


def results(returned, outputs):
    if isinstance(returned, dict):
        missing = [o["name"] for o in outputs if o["name"] not in returned]
        if missing:
            raise KeyError(f"the function's dict has no {', '.join(missing)}")
        return [returned[o["name"]] for o in outputs]
    if len(outputs) == 1 and not isinstance(returned, (tuple, list)):
        return [returned]
    if not isinstance(returned, (tuple, list)) or len(returned) != len(outputs):
        count = len(returned) if isinstance(returned, (tuple, list)) else 1
        raise ValueError(f"the function returned {count} value(s) for {len(outputs)} output(s)")
    return list(returned)


# Where a request has "gpu": its buffers are the runner's, opened in place (CUDA IPC) by the
# CUDA driver in torch's context; the function is given copies of its inputs on the GPU and
# its outputs are written into the runner's output buffers, all before the reply.
class IpcHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * 64)]


TYPESTR = {"f16": "<f2", "bf16": "<i2", "f32": "<f4", "f64": "<f8", "i8": "|i1", "u8": "|u1",
           "i16": "<i2", "u16": "<u2", "i32": "<i4", "u32": "<u4", "i64": "<i8", "u64": "<u8"}


class Shared:
    """A runner's buffer, opened in this process, as torch takes it."""

    def __init__(self, pointer, buffer):
        self.__cuda_array_interface__ = {
            "shape": (buffer["len"],), "typestr": TYPESTR[buffer["dtype"]],
            "data": (pointer, False), "version": 3, "strides": None,
        }


def opened(buffer, torch, cuda, pointers):
    handle = IpcHandle()
    ctypes.memmove(ctypes.byref(handle), bytes.fromhex(buffer["ipc"]), 64)
    pointer = ctypes.c_uint64()
    # CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
    code = cuda.cuIpcOpenMemHandle_v2(ctypes.byref(pointer), handle, ctypes.c_uint(1))
    if code != 0:
        raise RuntimeError(f"cannot open the runner's buffer `{buffer['name']}` (CUDA error {code})")
    pointers.append(pointer.value)
    tensor = torch.as_tensor(Shared(pointer.value, buffer), device="cuda")
    return tensor.view(torch.bfloat16) if buffer["dtype"] == "bf16" else tensor


def write_on_gpu(value, into, out, torch):
    name, dtype = out["name"], out["dtype"]
    value = torch.as_tensor(value).to("cuda")
    if value.numel() != out["len"]:
        raise ValueError(
            f"`{name}`: the function returned {value.numel()} elements (shape "
            f"{tuple(value.shape)}), the kernel's output holds {out['len']}")
    if value.is_floating_point() != (dtype in ("f16", "bf16", "f32", "f64")):
        raise TypeError(f"`{name}`: the function returned {value.dtype} for an output of {dtype}")
    into.copy_(value.reshape(-1).to(into.dtype))


def serve_on_gpu(request, call):
    try:
        import torch
    except ImportError as e:
        raise RuntimeError(f"gpu = true needs torch with CUDA in this interpreter ({e}): "
                           "install it, name another with python = \"...\", or leave gpu out") from None
    if not torch.cuda.is_available():
        raise RuntimeError("gpu = true needs torch with CUDA: this interpreter's torch sees no GPU")
    torch.zeros(1, device="cuda")  # torch's context current on this thread, for the driver
    cuda = ctypes.CDLL("libcuda.so.1")
    pointers = []
    try:
        kwargs = {}
        for a in request["args"]:
            kwargs[a["name"]] = a["value"] if "value" in a else opened(a, torch, cuda, pointers).clone()
        outputs = request["outputs"]
        targets = [opened(o, torch, cuda, pointers) for o in outputs]
        returned = call(**kwargs)
        for value, into, out in zip(results(returned, outputs), targets, outputs):
            write_on_gpu(value, into, out, torch)
        torch.cuda.synchronize()
    finally:
        for pointer in pointers:
            cuda.cuIpcCloseMemHandle(ctypes.c_uint64(pointer))


def serve(request):
    call = function(request["file"], request["function"])
    if request.get("gpu"):
        serve_on_gpu(request, call)
        return
    torch = None
    if request["torch"]:
        import torch
    kwargs = {a["name"]: argument(a, torch) for a in request["args"]}
    returned = call(**kwargs)
    outputs = request["outputs"]
    for value, out in zip(results(returned, outputs), outputs):
        write(as_array(value, out["name"]), out)


def main():
    # The replies keep the process's standard output to themselves: what the function or a
    # library it calls writes there, from Python or C, goes to standard error.
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    for line in sys.stdin:
        request = json.loads(line)
        try:
            serve(request)
            reply = {"ok": True}
        except BaseException as e:  # the function's own errors, exits included
            frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == request["file"]]
            where = f" (line {frames[-1].lineno} of {os.path.basename(frames[-1].filename)})" if frames else ""
            reply = {"error": f"{type(e).__name__}: {e}{where}"}
        reply["id"] = request.get("id")
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


main()
