"""CUDA kernels of an exported artifact, compiled here instead of on the device.

TVM 0.27 keeps CUDA source in the library and compiles it on load, on the device. Here the
kernels are compiled with NVRTC 12.2 (JetPack 6's CUDA, so it runs on every JetPack 6 driver)
to a cubin (default) or PTX, and the CUDA module's entry in the library blob (tvm-ffi layout
``<nbytes><import tree>{<kind><bytes>}``, module bytes ``<fmt><fmap><code>``) is rewritten
from ``cuda`` to ``cubin``/``ptx``. The blob is linked in through an assembler ``.incbin``
(``make_fpack_imports``, passed to ``export_library``).
"""
from __future__ import annotations

import contextlib
import ctypes
import struct
from pathlib import Path

from .errors import ExportError

NVRTC_PIN = "nvidia-cuda-nvrtc-cu12==12.2.140"


# NVRTC needs the two libcu++ headers TVM's CUDA prelude includes under __CUDACC_RTC__; the
# NVRTC 12.2 wheel ships none, so these minimal equivalents are passed in memory.
_CSTDINT = b"""#pragma once
namespace cuda { namespace std {
typedef signed char int8_t; typedef short int16_t; typedef int int32_t; typedef long long int64_t;
typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
}}
"""
_TYPE_TRAITS = b"""#pragma once
namespace cuda { namespace std {
template <class T, T v> struct integral_constant { static constexpr T value = v; };
typedef integral_constant<bool, true> true_type; typedef integral_constant<bool, false> false_type;
template <class A, class B> struct is_same : false_type {};
template <class A> struct is_same<A, A> : true_type {};
template <class A, class B> constexpr bool is_same_v = is_same<A, B>::value;
template <class T> struct remove_cv { typedef T type; };
template <class T> struct remove_cv<const T> { typedef T type; };
template <class T> struct remove_cv<volatile T> { typedef T type; };
template <class T> struct remove_cv<const volatile T> { typedef T type; };
template <class T> struct is_integral_base : false_type {};
#define EB_INT_(T) template <> struct is_integral_base<T> : true_type {};
EB_INT_(bool) EB_INT_(char) EB_INT_(signed char) EB_INT_(unsigned char) EB_INT_(short)
EB_INT_(unsigned short) EB_INT_(int) EB_INT_(unsigned int) EB_INT_(long) EB_INT_(unsigned long)
EB_INT_(long long) EB_INT_(unsigned long long)
#undef EB_INT_
template <class T> struct is_integral : is_integral_base<typename remove_cv<T>::type> {};
template <class T> struct is_fp_base : false_type {};
template <> struct is_fp_base<float> : true_type {};
template <> struct is_fp_base<double> : true_type {};
template <class T> struct is_floating_point : is_fp_base<typename remove_cv<T>::type> {};
template <class T> struct is_signed
  : integral_constant<bool, (is_integral<T>::value || is_floating_point<T>::value) && T(-1) < T(0)> {};
template <class T> struct is_unsigned
  : integral_constant<bool, is_integral<T>::value && T(0) < T(-1)> {};
template <bool B, class T = void> struct enable_if {};
template <class T> struct enable_if<true, T> { typedef T type; };
template <bool B, class T, class F> struct conditional { typedef T type; };
template <class T, class F> struct conditional<false, T, F> { typedef F type; };
}}
"""


def _nvrtc():
    try:
        import nvidia.cuda_nvrtc as pkg
    except ImportError:
        raise ExportError("NVRTC 12 is needed to compile the CUDA kernels: pip install "
                          f"'{NVRTC_PIN}'") from None
    for base in list(pkg.__path__):
        lib = Path(base) / "lib" / "libnvrtc.so.12"
        if lib.is_file():
            return ctypes.CDLL(str(lib))
    raise ExportError(f"libnvrtc.so.12 not found in {list(pkg.__path__)}: pip install '{NVRTC_PIN}'")


@contextlib.contextmanager
def _thread_locale_kept():
    """Put the thread's locale back after NVRTC 12, which leaves the thread in a C locale
    (``uselocale``): later ``open()`` calls without an encoding would then read ASCII."""
    libc = ctypes.CDLL(None)
    use = getattr(libc, "uselocale", None)
    if use is None:                      # no POSIX-2008 per-thread locales here: nothing to keep
        yield
        return
    use.restype, use.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
    before = use(None)                   # NULL: query only
    try:
        yield
    finally:
        use(before)


def nvrtc_version() -> str:
    nv = _nvrtc()
    a, b = ctypes.c_int(), ctypes.c_int()
    nv.nvrtcVersion(ctypes.byref(a), ctypes.byref(b))
    return f"{a.value}.{b.value}"


def nvrtc_compile(source: str, arch: str, fmt: str = "cubin") -> bytes:
    """CUDA C++ -> cubin (``sm_XY``) or PTX (``compute_XY``) with NVRTC 12."""
    with _thread_locale_kept():
        return _nvrtc_compile(_nvrtc(), source, arch, fmt)


def _nvrtc_compile(nv, source: str, arch: str, fmt: str) -> bytes:
    num = arch.split("_", 1)[1]
    gpu = f"sm_{num}" if fmt == "cubin" else f"compute_{num}"
    prog = ctypes.c_void_p()
    names = (ctypes.c_char_p * 2)(b"cuda/std/cstdint", b"cuda/std/type_traits")
    heads = (ctypes.c_char_p * 2)(_CSTDINT, _TYPE_TRAITS)
    rc = nv.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"tvm_kernels.cu", 2,
                               heads, names)
    if rc != 0:
        raise ExportError(f"nvrtcCreateProgram failed ({rc})")
    try:
        opts = [f"--gpu-architecture={gpu}".encode(), b"--use_fast_math", b"-std=c++17",
                b"-diag-suppress=177,550"]
        rc = nv.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
        if rc != 0:
            n = ctypes.c_size_t()
            nv.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
            logbuf = ctypes.create_string_buffer(n.value)
            nv.nvrtcGetProgramLog(prog, logbuf)
            raise ExportError("NVRTC failed to compile the CUDA kernels:\n"
                              + logbuf.value.decode(errors="replace")[-3000:])
        n = ctypes.c_size_t()
        size_fn, get_fn = ((nv.nvrtcGetCUBINSize, nv.nvrtcGetCUBIN) if fmt == "cubin"
                           else (nv.nvrtcGetPTXSize, nv.nvrtcGetPTX))
        size_fn(prog, ctypes.byref(n))
        buf = ctypes.create_string_buffer(n.value)
        get_fn(prog, buf)
        data = buf.raw
        return data.rstrip(b"\0") + b"\0" if fmt == "ptx" else data
    finally:
        nv.nvrtcDestroyProgram(ctypes.byref(prog))


# ----------------------------------------------------------------------------- library blob

def _u64(b, o):
    return struct.unpack_from("<Q", b, o)[0], o + 8


def _str(b, o):
    n, o = _u64(b, o)
    return bytes(b[o:o + n]), o + n


def _pack_str(s: bytes) -> bytes:
    return struct.pack("<Q", len(s)) + s


def rewrite_cuda_modules(blob: bytes, arch: str, fmt: str, sources: list[str]) -> tuple[bytes, dict]:
    """Compile every CUDA-source module inside a tvm-ffi library blob to ``fmt``.

    ``sources``: the CUDA source of each CUDA module (``inspect_source("cuda")``); the module's
    bytes end with that source as a length-prefixed string, which is how it is located."""
    nbytes, o = _u64(blob, 0)
    if nbytes != len(blob) - 8:
        raise ExportError(f"unexpected library blob layout ({nbytes} != {len(blob) - 8})")
    n_indptr, o2 = _u64(blob, o)
    o2 += 8 * n_indptr               # indptr
    n, o2 = _u64(blob, o2)
    o2 += 8 * n                      # child indices
    out = [blob[8:o2]]
    info = {"modules": 0, "compiled": 0}
    for _ in range(n_indptr - 1):
        kind, o3 = _str(blob, o2)
        out.append(blob[o2:o3])
        o2 = o3
        if kind == b"_lib":
            continue
        body, o3 = _str(blob, o2)
        if kind == b"cuda":
            info["modules"] += 1
            body = _rewrite_cuda(body, arch, fmt, sources, info)
        out.append(_pack_str(body))
        o2 = o3
    if o2 != len(blob):
        raise ExportError("unexpected trailing bytes in the library blob")
    payload = b"".join(out)
    return struct.pack("<Q", len(payload)) + payload, info


def _rewrite_cuda(body: bytes, arch: str, fmt: str, sources: list[str], info: dict) -> bytes:
    kind_fmt, p = _str(body, 0)
    if kind_fmt != b"cuda":
        info["already"] = kind_fmt.decode()
        return body                              # already ptx/cubin (compiled on a GPU box)
    # CUDA module bytes: <fmt><fmap><code>, the code being the CUDA source.
    for src in sources:
        tail = _pack_str(src.encode())
        if body.endswith(tail) and len(body) - len(tail) >= p:
            fmap = body[p:len(body) - len(tail)]
            break
    else:
        raise ExportError("could not locate the CUDA source inside the CUDA module's bytes "
                          "(TVM's serialization changed?)")
    binary = nvrtc_compile(src, arch, fmt)
    info["compiled"] += 1
    info["source_bytes"] = info.get("source_bytes", 0) + len(src)
    info["binary_bytes"] = info.get("binary_bytes", 0) + len(binary)
    return _pack_str(fmt.encode()) + fmap + _pack_str(binary)


def _cuda_sources(mod) -> list[str]:
    out, stack, seen = [], [mod], set()
    while stack:
        m = stack.pop()
        for c in m.imports:
            if id(c) in seen:
                continue
            seen.add(id(c))
            if c.kind == "cuda":
                out.append(c.inspect_source("cuda"))
            stack.append(c)
    return out


def make_fpack_imports(arch: str, fmt: str, info: dict):
    """An ``export_library(fpack_imports=...)`` hook: the import blob with compiled CUDA
    kernels, as an assembler file the (cross) compiler links in."""
    import tvm_ffi

    def fpack(mod, is_system_lib, symbol_prefix, workspace_dir):
        if is_system_lib:
            raise ExportError("system-lib export is not supported")
        t = tvm_ffi.get_global_func("runtime.ModulePackImportsToTensor")(mod)
        blob = t.numpy().tobytes()
        blob, i = rewrite_cuda_modules(blob, arch, fmt, _cuda_sources(mod))
        info.update(i)
        bin_path = Path(workspace_dir) / "devc.bin"
        bin_path.write_bytes(blob)
        sym = f"{symbol_prefix}__tvm_ffi__library_bin"
        asm = Path(workspace_dir) / "devc.S"
        asm.write_text(
            "\t.section .rodata\n"
            f"\t.globl {sym}\n"
            f"\t.type {sym}, %object\n"
            "\t.balign 16\n"
            f"{sym}:\n"
            f'\t.incbin "{bin_path}"\n'
            f"\t.size {sym}, {len(blob)}\n"
            '\t.section .note.GNU-stack,"",%progbits\n', encoding="utf-8")
        return str(asm)

    return fpack
