"""Array manipulation routines, split by topic as CuPy's cupy/_manipulation: shape, transpose,
dims, join, split, tiling, rearrange, add_remove, basic, padding."""
from .add_remove import append, delete, insert, resize  # noqa: F401  (re-exported)
from .basic import clip, copyto, diagonal, trace  # noqa: F401  (re-exported)
from .dims import (  # noqa: F401  (re-exported)
    atleast_1d,
    atleast_2d,
    atleast_3d,
    broadcast_arrays,
    broadcast_shapes,
    broadcast_to,
    expand_dims,
    squeeze,
)
from .join import column_stack, concat, concatenate, dstack, hstack, row_stack, stack, vstack  # noqa: F401  (re-exported)
from .padding import pad  # noqa: F401  (re-exported)
from .rearrange import flip, fliplr, flipud, roll, rot90  # noqa: F401  (re-exported)
from .shape import ndim, ravel, reshape, shape, size  # noqa: F401  (re-exported)
from .split import array_split, dsplit, hsplit, split, unstack, vsplit  # noqa: F401  (re-exported)
from .tiling import repeat, tile  # noqa: F401  (re-exported)
from .transpose import matrix_transpose, moveaxis, permute_dims, rollaxis, swapaxes, transpose  # noqa: F401  (re-exported)
