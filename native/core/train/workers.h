// Moved to workers.h (native/core). This path forwards only until the training files being edited
// right now include the new one; then it goes.
#pragma once
#include "../workers.h"
