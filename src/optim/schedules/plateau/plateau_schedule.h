/* plateau_schedule.h (private) — the options of the reduce-on-plateau
 * schedule (plateau_schedule.c), as the config reads them from [train], and
 * the meaning of its state. */
#ifndef FUSENET_OPTIM_PLATEAU_SCHEDULE_H
#define FUSENET_OPTIM_PLATEAU_SCHEDULE_H

typedef struct fn_plateau_schedule_options {
    float factor;    /* the rate's factor at a reduction, in (0, 1) */
    int patience;    /* [train] plateau_patience: bad epochs allowed before one */
    float threshold; /* relative improvement that counts, in [0, 1) */
    int cooldown;    /* epochs after a reduction in which bad epochs are not counted */
    float min_lr;    /* the rate never goes below it */
} fn_plateau_schedule_options;

/* fn_schedule.state: all zeros before the first epoch's end. */
enum {
    FN_PLATEAU_LR,       /* the rate in effect (torch's param_group["lr"]) */
    FN_PLATEAU_BEST,     /* the best metric so far */
    FN_PLATEAU_BAD,      /* epochs since it (torch's num_bad_epochs) */
    FN_PLATEAU_COOLDOWN, /* cooldown epochs left (torch's cooldown_counter) */
    FN_PLATEAU_STARTED   /* 1 once an epoch ended */
};

#endif
