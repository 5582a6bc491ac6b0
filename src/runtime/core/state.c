#include "state.h"

_Atomic int npkit_state = NPKIT_STATE_NEW;
npkit_config npkit_cfg;
_Atomic int npkit_stopping;
__thread int npkit_own_thread __attribute__((tls_model("initial-exec")));
