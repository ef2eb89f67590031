/* step_schedule.h (private) — the options of the step schedule
 * (step_schedule.c), as the config reads them from [train]. */
#ifndef FUSENET_OPTIM_STEP_SCHEDULE_H
#define FUSENET_OPTIM_STEP_SCHEDULE_H

typedef struct fn_step_schedule_options {
    int step_size; /* steps between decays, >= 1; required */
    float gamma;   /* the factor of each decay, > 0 */
} fn_step_schedule_options;

#endif
