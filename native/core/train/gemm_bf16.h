// Moved to kernels/gemm_bf16.h (the encoder uses it too). This path forwards only until the training
// files being edited right now include the new one; then it goes.
#pragma once
#include "kernels/gemm_bf16.h"
