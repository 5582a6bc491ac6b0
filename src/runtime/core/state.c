#include "state.h"

_Atomic int npkit_state = NPKIT_STATE_NEW;
npkit_config npkit_cfg;
