/* cosine_schedule.h (private) — the options of the cosine schedule
 * (cosine_schedule.c), as the config reads them from [train]. */
#ifndef FUSENET_OPTIM_COSINE_SCHEDULE_H
#define FUSENET_OPTIM_COSINE_SCHEDULE_H

typedef struct fn_cosine_schedule_options {
    float min_lr; /* the rate at the run's end, >= 0 and <= lr */
} fn_cosine_schedule_options;

#endif
