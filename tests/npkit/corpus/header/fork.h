#ifndef NPKIT_EVENT_H_
#define NPKIT_EVENT_H_
/* A fork that renumbers everything.
#define NPKIT_EVENT_COMMENTED_OUT 0x99
*/
#define NPKIT_EVENT_INVALID                 0x0
#define NPKIT_EVENT_TIME_SYNC_CPU           0x10   // moved
#define NPKIT_EVENT_TIME_SYNC_GPU           (0x11)
#define NPKIT_EVENT_MY_KERNEL_ENTRY         200
#define NPKIT_EVENT_MY_KERNEL_EXIT          0xC9u
#  define NPKIT_EVENT_MY_STEP_ENTRY         0x20
#define NPKIT_EVENT_MY_STEP_EXIT            07     /* exit id below the entry id */
#define NPKIT_EVENT_MY_MARK \
        0x21
#define NPKIT_PRIM_COLLECT_DATA_PROCESS_TIME 0x4F
#define NPKIT_EVENT_NET_SEND_ENTRY          0x30
#define NPKIT_EVENT_NET_SEND_EXIT           0x2F
#endif
