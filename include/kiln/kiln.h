/* kiln/kiln.h - the whole public API of kiln in one include. */
#ifndef KILN_KILN_H
#define KILN_KILN_H

#include "common.h"
#include "graph.h"
#include "runtime.h"
#include "device.h"
#include "custom.h"
#include "onnx.h"

#endif
