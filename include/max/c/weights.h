/* max/c/weights.h - weights registries of kiln's MAX C API layer.
 *
 * A registry maps weight names (the `name` of the graph's
 * mo.constant.external) to data the caller owns: the data is borrowed, never
 * copied, and must stay alive as long as any model initialized from the
 * registry (the registry itself may be freed once M_initModel returns).
 * A registry from M_newWeightsRegistry has no shapes: each weight takes the
 * dtype and the static shape the graph declares (a weight with a symbolic
 * dim needs a registry from M_newWeightsRegistryFromSafetensors, which
 * carries shapes that are then checked against the graph). */
#ifndef MAX_C_WEIGHTS_H
#define MAX_C_WEIGHTS_H

#include "max/c/types.h"

MAX_C_BEGIN

/* names[numWeights] are copied, data[numWeights] borrowed. A NULL name or a
 * name given twice is an error. Owned by the caller: M_freeWeightsRegistry. */
MAX_C_API M_WeightsRegistry *M_newWeightsRegistry(const char **names, const void **data,
                                                  size_t numWeights, M_Status *status);
MAX_C_API void M_freeWeightsRegistry(M_WeightsRegistry *weightsRegistry); /* no-op on NULL */

MAX_C_END
#endif /* MAX_C_WEIGHTS_H */
