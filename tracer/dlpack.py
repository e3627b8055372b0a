"""DLPack capsules made and read with ctypes: what NumPy does in C for host memory, for the
device memory of the cuda backend (numba.cuda has no DLPack producer) and for device memory
handed in (NumPy's consumer takes host memory only). The layouts are dlpack.h's (v1.0)."""
from __future__ import annotations

import ctypes
import math

import numpy as np

CPU, CUDA = 1, 2  # DLDeviceType
READ_ONLY, IS_COPIED = 1, 2  # DLManagedTensorVersioned.flags
VERSION = (1, 0)


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32),
                ("dtype", _DataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _Managed(ctypes.Structure):  # DLManagedTensor (before 1.0)
    pass


class _Versioned(ctypes.Structure):  # DLManagedTensorVersioned
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_Managed._fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p),
                     ("deleter", _DELETER)]
_Versioned._fields_ = [("version", _Version), ("manager_ctx", ctypes.c_void_p),
                       ("deleter", _DELETER), ("flags", ctypes.c_uint64), ("dl_tensor", _Tensor)]

_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]

NAME, USED = b"dltensor_versioned", b"used_dltensor_versioned"
OLD_NAME, OLD_USED = b"dltensor", b"used_dltensor"

# address of a tensor struct this process exported -> (the struct, its shape and strides, the
# array whose memory it describes): alive until the consumer (or the unused capsule) deletes it
_EXPORTED: dict[int, tuple] = {}


@_DELETER
def _delete(address):
    _EXPORTED.pop(address, None)


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _capsule_gone(capsule):
    """A capsule no consumer took: its tensor is deleted with it (a taken one was renamed,
    and the consumer calls the deleter)."""
    for name in (NAME, OLD_NAME):
        if _api.PyCapsule_IsValid(capsule, name):
            _EXPORTED.pop(_api.PyCapsule_GetPointer(capsule, name), None)


_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}  # kDLInt, kDLUInt, kDLFloat, kDLComplex, kDLBool


def capsule(arr, ptr: int, device: tuple[int, int], flags: int, versioned: bool):
    """A DLPack capsule over `arr` (a device array, kept alive by the capsule) at address ptr,
    laid out as arr.strides (bytes) say."""
    dt = np.dtype(arr.dtype)
    if dt.kind not in _CODES or dt.byteorder == ">":
        raise BufferError(f"DLPack only supports signed/unsigned integers, float and complex "
                          f"dtypes, not {dt}")
    ndim = len(arr.shape)
    shape = (ctypes.c_int64 * max(ndim, 1))(*arr.shape)
    strides = (ctypes.c_int64 * max(ndim, 1))(*(s // dt.itemsize for s in arr.strides))
    t = _Versioned() if versioned else _Managed()
    tensor = t.dl_tensor
    tensor.data = ptr
    tensor.device = _Device(*device)
    tensor.ndim = ndim
    tensor.dtype = _DataType(_CODES[dt.kind], dt.itemsize * 8, 1)
    tensor.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    tensor.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
    tensor.byte_offset = 0
    t.deleter = _delete
    if versioned:
        t.version = _Version(*VERSION)
        t.flags = flags
    address = ctypes.addressof(t)
    _EXPORTED[address] = (t, shape, strides, arr)
    return _api.PyCapsule_New(address, NAME if versioned else OLD_NAME,
                              ctypes.cast(_capsule_gone, ctypes.c_void_p))


class Taken:
    """A tensor taken from a capsule: its fields, and its deleter called when this object
    (held by whatever uses the memory) goes."""

    def __init__(self, cap):
        self._ptr = 0
        if _api.PyCapsule_IsValid(id(cap), NAME):
            name, used, kind = NAME, USED, _Versioned
        elif _api.PyCapsule_IsValid(id(cap), OLD_NAME):
            name, used, kind = OLD_NAME, OLD_USED, _Managed
        else:
            raise BufferError("not a DLPack capsule, or one already consumed")
        ptr = _api.PyCapsule_GetPointer(id(cap), name)
        m = kind.from_address(ptr)
        if kind is _Versioned and m.version.major > VERSION[0]:
            raise BufferError(f"DLPack version {m.version.major}.{m.version.minor} is not "
                              "supported")
        t = m.dl_tensor
        self.read_only = kind is _Versioned and bool(m.flags & READ_ONLY)
        self.device = (t.device.device_type, t.device.device_id)
        code, bits, lanes = t.dtype.code, t.dtype.bits, t.dtype.lanes
        kinds = {0: "i", 1: "u", 2: "f", 5: "c", 6: "b"}
        if code not in kinds or lanes != 1:
            raise BufferError(f"DLPack data type (code {code}, {bits} bits, {lanes} lanes) "
                              "is not supported")
        self.dtype = np.dtype(f"{kinds[code]}{bits // 8}" if code != 6 else "?")
        self.shape = tuple(t.shape[k] for k in range(t.ndim))
        item = self.dtype.itemsize
        if t.strides:
            self.strides = tuple(t.strides[k] * item for k in range(t.ndim))
        else:  # NULL: C order
            st, acc = [], item
            for d in reversed(self.shape):
                st.append(acc)
                acc *= max(d, 1)
            self.strides = tuple(reversed(st))
        self.data = (t.data or 0) + t.byte_offset
        self.nbytes = math.prod(self.shape) * item
        _api.PyCapsule_SetName(cap, used)  # taken: the capsule no longer deletes it
        self._ptr, self._deleter = ptr, m.deleter

    def interface(self) -> dict:
        """The CUDA array interface of the tensor."""
        return {"shape": self.shape, "typestr": self.dtype.str, "version": 3,
                "strides": self.strides, "data": (self.data, self.read_only), "stream": None}

    def __del__(self):
        if self._ptr and self._deleter:
            self._deleter(self._ptr)
            self._ptr = 0
