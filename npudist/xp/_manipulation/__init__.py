"""Array manipulation routines, split by topic as CuPy's cupy/_manipulation: shape, transpose,
dims, join, split, tiling, rearrange, add_remove, basic, padding."""
from .shape import reshape, ravel, shape, ndim, size  # noqa: F401  (re-exported)
from .transpose import transpose, permute_dims, matrix_transpose, swapaxes, moveaxis, rollaxis  # noqa: F401  (re-exported)
from .dims import expand_dims, squeeze, atleast_1d, atleast_2d, atleast_3d, broadcast_to, broadcast_shapes, broadcast_arrays  # noqa: F401  (re-exported)
from .join import concatenate, concat, stack, vstack, row_stack, hstack, dstack, column_stack  # noqa: F401  (re-exported)
from .split import array_split, split, hsplit, vsplit, dsplit, unstack  # noqa: F401  (re-exported)
from .tiling import tile, repeat  # noqa: F401  (re-exported)
from .rearrange import flip, fliplr, flipud, roll, rot90  # noqa: F401  (re-exported)
from .padding import pad  # noqa: F401  (re-exported)
from .basic import copyto, clip, diagonal, trace  # noqa: F401  (re-exported)
from .add_remove import delete, insert, append, resize  # noqa: F401  (re-exported)
