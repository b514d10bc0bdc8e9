/* stub_controller.h — test-only extras of the stub controller. */
#ifndef OOMD_FS_TESTS_STUB_CONTROLLER_H
#define OOMD_FS_TESTS_STUB_CONTROLLER_H
#include <glib.h>
#include "oomd/controller.h"
void stub_controller_set_under_oom(od_controller *c, uint64_t id, bool on);
int stub_controller_adds(od_controller *c);
void stub_controller_notify(od_controller *c, uint64_t id);  /* fires the notify hooks */
void stub_controller_removed(od_controller *c, uint64_t id); /* forgets id, fires removed */
/* while on, writes of memory.oom_delay_millisecs wait in their handler; how many wait */
void stub_controller_hold_delay_writes(bool on);
int stub_controller_delay_writes_held(void);
/* while on, views (the reads of memory.oom_control, the delay, ...) wait in their handler,
 * as a quick handler stalls on a preempted vCPU or an allocation in reclaim; how many wait */
void stub_controller_hold_views(bool on);
int stub_controller_views_held(void);
#endif
