"""kiln.graph.ops: the graph ops, as ``max.graph.ops`` (names, argument order
and defaults of MAX's functions, over kiln's MO ops).

One module per family: elementwise, reduction, shape, indexing, nn, sorting,
fft (irfft), misc (constants, range, matmul, print, transfer_to, fence), quant (dequantize,
qmatmul), random, custom, buffer,
control (cond, while_loop, call). Every op is added to its graph at once; kiln
infers the result type and raises kiln.VerifyError / kiln.DTypeError /
kiln.ShapeError naming the problem.
"""

from __future__ import annotations

from ..type import TensorType
from . import _core, random
from .buffer import *  # noqa: F401,F403
from .buffer import __all__ as _buffer_all
from .control import *  # noqa: F401,F403
from .control import __all__ as _control_all
from .custom import *  # noqa: F401,F403
from .custom import __all__ as _custom_all
from .elementwise import *  # noqa: F401,F403
from .elementwise import __all__ as _elementwise_all
from .fft import *  # noqa: F401,F403
from .fft import __all__ as _fft_all
from .indexing import *  # noqa: F401,F403
from .indexing import __all__ as _indexing_all
from .misc import *  # noqa: F401,F403
from .misc import __all__ as _misc_all
from .nn import *  # noqa: F401,F403
from .nn import __all__ as _nn_all
from .quant import *  # noqa: F401,F403
from .quant import __all__ as _quant_all
from .reduction import *  # noqa: F401,F403
from .reduction import __all__ as _reduction_all
from .shape import *  # noqa: F401,F403
from .shape import __all__ as _shape_all
from .sorting import *  # noqa: F401,F403
from .sorting import __all__ as _sorting_all

__all__ = sorted(set(_buffer_all + _control_all + _custom_all + _elementwise_all + _fft_all
                     + _indexing_all + _misc_all + _nn_all + _quant_all + _reduction_all + _shape_all
                     + _sorting_all + ["random", "TensorType"]))
