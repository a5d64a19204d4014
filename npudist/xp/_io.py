"""File input and output (matches numpy.save, load, savez, savez_compressed, savetxt; CuPy's
cupy/_io/npz.py and text.py). The files are NumPy's formats written and read by NumPy itself on the
host: xp arrays are copied to the host to be written, and arrays read are copied onto the npu once
(reading and writing files is host I/O, as in CuPy). The text readers (loadtxt, genfromtxt, ...)
are in _creation."""
import numpy as np

from ._core import ndarray
from ._creation import asarray

__all__ = ["save", "load", "savez", "savez_compressed", "savetxt", "NpzFile"]


def _host(a):
    return a.get() if isinstance(a, ndarray) else a


def save(file, arr, allow_pickle=True):
    """Writes one array in NumPy's .npy format (matches numpy.save: ``file`` a path, ``.npy`` added
    when missing, or a binary file object). An xp array is copied to the host first; other objects
    are written as NumPy writes them (pickled object arrays only with ``allow_pickle=True``, else
    ValueError)."""
    np.save(file, _host(arr), allow_pickle=allow_pickle)


def savez(file, *args, allow_pickle=True, **kwds):
    """Writes several arrays into an uncompressed .npz archive (matches numpy.savez: positional
    arrays are named ``arr_0``, ``arr_1``, ..., keyword arrays by their keyword)."""
    np.savez(file, *[_host(a) for a in args], allow_pickle=allow_pickle, **{k: _host(v) for k, v in kwds.items()})


def savez_compressed(file, *args, allow_pickle=True, **kwds):
    """As savez, into a zip-deflated archive (matches numpy.savez_compressed)."""
    np.savez_compressed(file, *[_host(a) for a in args], allow_pickle=allow_pickle,
                        **{k: _host(v) for k, v in kwds.items()})


class NpzFile:
    """An open .npz archive whose arrays are read onto the npu (as cupy's NpzFile over
    numpy.lib.npyio.NpzFile): ``f['name']`` reads one array and returns it as an xp array; ``files``,
    ``keys()``, ``in``, ``len``, iteration; ``close()`` or ``with`` closes the file."""

    def __init__(self, npz_file):
        self.npz_file = npz_file

    def __enter__(self):
        self.npz_file.__enter__()
        return self

    def __exit__(self, typ, val, traceback):
        self.npz_file.__exit__(typ, val, traceback)

    def __getitem__(self, key):
        arr = self.npz_file[key]
        return asarray(arr) if isinstance(arr, np.ndarray) and arr.dtype != object else arr

    def __contains__(self, key):
        return key in self.npz_file

    def __iter__(self):
        return iter(self.npz_file)

    def __len__(self):
        return len(self.npz_file)

    @property
    def files(self):
        return self.npz_file.files

    def keys(self):
        return self.npz_file.keys()

    def close(self):
        self.npz_file.close()


def load(file, mmap_mode=None, allow_pickle=False, fix_imports=True, encoding="ASCII", *, max_header_size=10000):
    """Reads a .npy, .npz or pickle file (matches numpy.load; NumPy parses it on the host). An .npy
    array is returned as an xp array on the npu (``mmap_mode`` maps the file on the host, the array is
    then copied), an .npz archive as an NpzFile whose items are read onto the npu, a pickle as what
    it unpickles (only with ``allow_pickle=True``, else NumPy's ValueError). Object arrays are
    returned as NumPy arrays (xp has no object dtype)."""
    obj = np.load(file, mmap_mode, allow_pickle, fix_imports, encoding, max_header_size=max_header_size)
    if isinstance(obj, np.ndarray) and obj.dtype != object:
        return asarray(obj)
    if isinstance(obj, np.lib.npyio.NpzFile):
        return NpzFile(obj)
    return obj


def savetxt(fname, X, fmt="%.18e", delimiter=" ", newline="\n", header="", footer="", comments="# ",
            encoding=None):
    """Writes a 1-D or 2-D array as text (matches numpy.savetxt, every parameter; NumPy formats a
    host copy of X). Errors are NumPy's (ValueError for other dimensions or a bad ``fmt``)."""
    np.savetxt(fname, _host(X), fmt=fmt, delimiter=delimiter, newline=newline, header=header, footer=footer,
               comments=comments, encoding=encoding)
